"""Planted interest taxonomy of the synthetic ads world: 6 super-interests x 4 mids x 4 leaves.

The 96 leaves are real e-commerce/ads niches (e.g. fashion > footwear > trail running shoes),
described by ordinary English words, so that a general sentence-embedding model such as
all-MiniLM-L6-v2 recovers the hierarchy from generated text, but only imperfectly:

* siblings share their mid's and super's words, so leaves of one mid sit close together;
* some words are deliberately ambiguous and appear in leaves of *different* super-interests
  ("running", "apple", "light", "case", "charger", "vintage", "pendant", "alexa", ...);
* ``GENERIC_WORDS`` are marketing noise ("sale", "free shipping") that carries no interest;
* ``BRAND_SYLLABLES`` build meaningless fake brand names ("Zantro", "Kalivo").

All words are lower-case ascii. The structure is checked at import (``ValueError``).
Ids: ``leaf_id = super * 16 + mid * 4 + leaf``, ``mid_id = super * 4 + mid``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Leaf:
    name: str  # e.g. "trail running shoes"
    words: tuple[str, ...]  # 8-12 lower-case words/short phrases typical of this leaf


@dataclass(frozen=True)
class MidInterest:
    name: str  # e.g. "footwear"
    words: tuple[str, ...]  # 5-8 words shared by its leaves
    leaves: tuple[Leaf, Leaf, Leaf, Leaf]


@dataclass(frozen=True)
class SuperInterest:
    name: str  # e.g. "fashion"
    words: tuple[str, ...]  # 5-8 broad words
    mids: tuple[MidInterest, MidInterest, MidInterest, MidInterest]


N_SUPERS = 6
MIDS_PER_SUPER = 4
LEAVES_PER_MID = 4
N_MIDS = N_SUPERS * MIDS_PER_SUPER  # 24
N_LEAVES = N_MIDS * LEAVES_PER_MID  # 96

# Compact data: "# super | words", "## mid | words", "- leaf | words" (words comma-separated).
_RAW = """
# fashion | style, outfit, wardrobe, designer, trendy, apparel, look
## footwear | shoes, pair, sole, fit, size, laces
- trail running shoes | trail, running, grip, lugged outsole, cushioned, mesh, waterproof,
  rock plate, lightweight, marathon
- leather boots | leather, ankle boots, chelsea, combat, suede, heel, stitched welt, polish,
  winter
- sneakers | sneakers, streetwear, high top, canvas, retro, limited drop, white, skate
- sandals | sandals, flip flops, summer, toe post, straps, slides, open toe, cork footbed, cork
## outerwear | jacket, coat, layer, zip, hood, warm
- rain jackets | rain, waterproof shell, packable, taped seams, drizzle, hooded, windbreaker,
  storm
- winter parkas | parka, down, insulated, arctic, fur trim, puffer, snow, cold weather
- denim jackets | denim, jean jacket, trucker, indigo, faded, buttons, vintage, sherpa
- blazers | blazer, tailored, suit, lapel, office, wool blend, formal, slim cut
## jewelry and watches | jewelry, accessory, gift, shine, elegant, sparkle
- wristwatches | watch, wristwatch, dial, automatic, chronograph, strap, sapphire crystal,
  swiss made
- necklaces | necklace, pendant, chain, gold, silver, charm, choker, gemstone
- earrings | earrings, studs, hoops, pierced, diamond, dangle, pearl, drop
- sunglasses | sunglasses, polarized, uv protection, lenses, aviator, frames, shades, tinted
## handbags | handbag, purse, bag, carry, leather goods, everyday
- tote bags | tote, shoulder bag, canvas tote, roomy, market, handles, zipper, work bag
- clutches | clutch, evening, sequin, beaded, party, envelope, wedding, small
- wallets | wallet, cardholder, bifold, rfid blocking, coin pocket, slim, leather, cash
- crossbody bags | crossbody, sling, adjustable strap, compact, hands free, chain strap,
  saddle bag, belt bag

# consumer electronics | tech, gadget, device, electronics, smart, battery, wireless
## audio | sound, audio, bass, music, noise, listen
- wireless earbuds | earbuds, bluetooth, true wireless, charging case, noise cancelling,
  in ear, microphone, sweatproof
- studio headphones | headphones, over ear, studio, monitoring, mixing, flat response,
  coiled cable, producer
- smart speakers | speaker, voice assistant, alexa, smart home, multiroom, stereo pair,
  room filling, hey
- turntables | turntable, vinyl, record, needle, stylus, platter, phono, analog
## phones and tablets | phone, mobile, screen, app, touch, handset
- smartphones | smartphone, apple, android, camera, 5g, unlocked, storage, display
- phone cases | case, protective, cover, shockproof, clear, silicone, magnetic, slim fit
- chargers and power banks | charger, power bank, usb c, fast charging, cable, wall adapter,
  wireless pad, portable
- tablets | tablet, ipad, stylus pen, drawing, reading, e reader, keyboard cover, apps
## computers | computer, laptop, pc, keyboard, processor, performance
- gaming laptops | gaming, rgb, graphics card, fps, high refresh, cooling, esports, gamer
- mechanical keyboards | mechanical, switches, keycaps, clicky, tactile, hot swap, typing,
  tenkeyless
- monitors | monitor, 4k, ultrawide, hdr, panel, curved, refresh rate, display
- ultrabooks | ultrabook, thin and light, light, battery life, aluminum, business, fanless,
  portable
## cameras | camera, photo, lens, shoot, image, pixels
- mirrorless cameras | mirrorless, sensor, full frame, megapixel, autofocus, interchangeable,
  body, 4k
- action cameras | action camera, helmet mount, waterproof housing, 4k, stabilization, surf,
  dive, extreme
- drones | drone, aerial, quadcopter, gimbal, flight time, propeller, fly, footage
- instant cameras | instant, polaroid, film, print, photo booth, snapshot, memories, selfie

# travel | trip, travel, vacation, holiday, destination, getaway, journey
## accommodation | stay, room, night, booking, check in, guests
- beach resorts | resort, beach, all inclusive, ocean view, pool, tropical, spa, cocktails
- city hotels | hotel, downtown, city break, boutique hotel, suite, concierge, skyline,
  business travel
- mountain cabins | cabin, chalet, mountain, fireplace, ski, lodge, cozy, woods
- vacation rentals | rental, apartment, villa, host, kitchen, family, weekly, self catering
## flights and transport | flight, fare, ticket, route, departure, airport
- budget airlines | cheap flights, low cost, carry on, baggage fee, economy, deal, one way,
  layover
- business class | business class, lie flat, lounge, priority boarding, premium, champagne,
  miles, upgrade
- train travel | train, rail pass, railway, scenic route, station, sleeper, high speed,
  europe
- car rental | car rental, pickup, road trip, suv, mileage, insurance, drop off, convertible
## luggage | luggage, packing, suitcase, travel gear, pack, bags
- carry on suitcases | carry on, spinner wheels, hard shell, case, overhead bin, tsa lock,
  expandable, cabin size
- travel backpacks | travel backpack, backpack, laptop sleeve, anti theft, clamshell,
  nomad, weekender, hip belt
- packing cubes | packing cubes, organizer, compression, toiletry bag, zippered, double zip,
  folding, tidy
- travel adapters | travel adapter, plug, universal, voltage, charger, usb ports, outlet,
  converter
## tours and experiences | tour, guide, experience, explore, sightseeing, adventure
- safari tours | safari, wildlife, game drive, savanna, lions, kenya, jeep, binoculars
- cruises | cruise, ship, deck, port, caribbean, onboard, sail, itinerary
- city walking tours | walking tour, old town, museum, history, landmarks, local guide,
  tickets, cathedral
- wine tasting tours | vineyard, wine tasting, wine, winery, cellar, countryside,
  sommelier, estate

# food and drink | food, taste, delicious, fresh, flavor, recipe, eat
## coffee and tea | brew, cup, caffeine, roast, morning, mug
- espresso beans | espresso, coffee beans, single origin, arabica, dark roast, crema,
  grinder, barista
- loose leaf tea | tea, loose leaf, green tea, matcha, oolong, steep, herbal, infuser
- cold brew | cold brew, iced, concentrate, nitro, smooth, ready to drink, refreshing, bottle
- coffee machines | espresso machine, pods, milk frother, pressure, drip, programmable,
  carafe, latte
## wine and spirits | drinks, alcohol, bar, cheers, glass, tasting
- red wine | wine, red, cabernet, merlot, vintage, tannins, vineyard, full bodied
- craft beer | craft beer, ipa, brewery, hops, lager, stout, pint, ale
- whiskey | whiskey, bourbon, single malt, scotch, oak barrel, aged, smoky, dram
- cocktail kits | cocktail, mixer, shaker, gin, margarita, bitters, garnish, mixology
## healthy eating | healthy, organic, nutrition, diet, natural, wholesome
- protein bars | protein bar, protein, snack, low sugar, whey, gym, energy, chocolate
- vegan meals | vegan, plant based, tofu, meal kit, dairy free, lentils, meatless, chickpea
- fresh fruit boxes | fruit, apple, berries, citrus, orchard, seasonal, juicy, harvest
- gluten free baking | gluten free, flour, almond, bread, baking mix, celiac, muffins,
  sourdough
## gourmet treats | treat, gourmet, artisan, indulge, gift box, sweet
- artisan chocolate | chocolate, cocoa, dark chocolate, truffles, praline, handmade, bonbons,
  hazelnut
- gourmet cheese | cheese, brie, aged cheddar, charcuterie, cheese board, parmesan, wedge,
  creamy
- hot sauce | hot sauce, chili, habanero, spicy, heat, pepper, scoville, bottle
- pastries | pastry, croissant, bakery, cake, cookies, butter, dessert, baked

# fitness and outdoors | fitness, workout, outdoor, active, training, health, sport
## gym equipment | home gym, equipment, strength, reps, exercise, sweat
- dumbbells | dumbbells, adjustable, weights, kettlebell, plates, rack, barbell, lifting, gym
- treadmills | treadmill, running, incline, cardio, belt, space saving, speed, motor
- yoga mats | yoga, mat, non slip, stretching, pilates, meditation, flexibility, cork
- exercise bikes | spin bike, indoor cycling, resistance, pedal, flywheel, class,
  stationary, cadence
## camping and hiking | camping, hiking, wilderness, backcountry, gear, trails
- tents | tent, shelter, storm proof, poles, sleeps four, rainfly, campsite, footprint
- ultralight backpacking | ultralight, light, backpack, base weight, thru hike, frameless,
  grams, trekking poles
- sleeping bags | sleeping bag, down, mummy, temperature rating, synthetic fill, compressible,
  sleeping pad, cold nights
- camp stoves | stove, camp kitchen, burner, fuel canister, cookware, boil, lantern, kettle
## cycling | bike, bicycle, ride, cycling, wheels, cyclist
- road bikes | road bike, carbon frame, drop bars, gears, race, aero, groupset, climbing
- mountain bikes | mountain bike, full suspension, downhill, dirt, knobby tires,
  singletrack, rocky, enduro
- electric bikes | e bike, electric, battery, motor assist, commuter, range, charger,
  pedal assist
- bike helmets | helmet, safety, mips, vents, visor, head protection, rear light, certified
## water sports | water, swim, paddle, waves, lake, splash
- surfboards | surfboard, longboard, wax, leash, fins, shortboard, surf, swell
- kayaks | kayak, inflatable, river, sit on top, touring, dry bag, paddle board, rapids
- swim gear | goggles, swim cap, pool, lap swimming, chlorine resistant, kickboard, laps,
  swimsuit
- snorkeling gear | snorkel, mask, dive fins, reef, dive, underwater, tropical, fish

# home and garden | home, house, decor, living, interior, household, garden
## furniture | furniture, assembly, wood, comfort, room, design
- sofas | sofa, sectional, couch, upholstery, velvet, recliner, cushions, living room
- mattresses | mattress, memory foam, sleep, firm, queen, hybrid, pillow top, bed in a box
- office chairs | office chair, ergonomic, lumbar support, desk, swivel, mesh back, armrest,
  work from home
- dining tables | dining table, extendable, oak, chairs, seats six, farmhouse, solid wood,
  marble
## lighting | lighting, lamp, bulb, glow, brightness, fixture
- floor lamps | floor lamp, light, arc lamp, lampshade, reading light, dimmable, tripod,
  corner
- smart bulbs | smart bulb, color changing, app control, wifi, led, alexa, scenes, light
- pendant lights | pendant, chandelier, ceiling, kitchen island, brass, hanging, industrial,
  glass shade
- string lights | string lights, fairy lights, patio, outdoor lights, warm white, solar,
  party lights, twinkle
## gardening | gardening, plants, grow, soil, yard, seeds
- vegetable seeds | heirloom, tomato, vegetable garden, germination, organic, raised bed,
  harvest, seedlings
- lawn mowers | lawn mower, grass, cordless, self propelled, blade, edging, mulching, lawn
- indoor plants | houseplant, monstera, succulents, pot, indoor, low light, greenery, planter
- garden tools | pruning shears, shovel, rake, trowel, gloves, hose, wheelbarrow, watering
## kitchen | kitchen, cook, cookware, chef, meal, countertop
- cast iron skillets | cast iron, skillet, seasoned, sear, pan, oven safe, dutch oven,
  heavy
- knife sets | knife, chef knife, sharp blade, sharpening, steel, santoku, cutting board,
  knife block
- blenders | blender, smoothie, puree, motor base, pitcher, crush ice, shakes, juices
- air fryers | air fryer, crispy, basket, oil free, fries, digital, quick, presets
"""

GENERIC_WORDS: tuple[str, ...] = tuple(
    w.strip()
    for w in """
    sale, free shipping, limited offer, new arrival, best seller, discount, shop now, exclusive,
    top rated, buy now, save big, deal of the day, official store, premium quality, gift idea,
    low price, order today, fast delivery, money back guarantee, trusted brand, customer favorite,
    hot deal, clearance, bundle and save, members only, while stocks last, award winning,
    free returns, flash sale, new collection, great value, only today
    """.split(",")
)

# Generic, interest-free product-type nouns (e.g. "Kalivo starter kit").
PRODUCT_NOUNS: tuple[str, ...] = tuple(
    w.strip()
    for w in """
    set, bundle, kit, pack, edition, collection, series, model, version, combo, essentials,
    starter kit, pro, classic, plus, original
    """.split(",")
)

# Meaningless syllables; concatenate 2-3 and capitalise for fake brands ("Zantro", "Kalivo").
BRAND_SYLLABLES: tuple[str, ...] = tuple(
    w.strip()
    for w in """
    ka, li, vo, zan, tro, mer, qui, lo, dex, ora, vel, nix, sa, ri, ton, bel, ko, ra, fi, nu,
    zo, la, mi, ven, ta, ro, vi, da, ke, pol, gri, mav, su, te, wen, ya, xo, bri, nor, cal
    """.split(",")
)


def _split_words(text: str) -> tuple[str, ...]:
    return tuple(" ".join(w.split()) for w in text.split(",") if w.strip())


def _parse(raw: str) -> tuple[SuperInterest, ...]:
    # Join continuation lines (indented) onto the previous entry.
    entries: list[str] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            if not entries:
                raise ValueError(f"taxonomy: continuation line without entry: {line!r}")
            entries[-1] += " " + line.strip()
        else:
            entries.append(line.strip())
    supers: list[tuple[str, tuple[str, ...], list]] = []
    for entry in entries:
        head, sep, rest = entry.partition("|")
        if not sep:
            raise ValueError(f"taxonomy: entry without '|': {entry!r}")
        words = _split_words(rest)
        if head.startswith("## "):
            if not supers:
                raise ValueError(f"taxonomy: mid before any super: {entry!r}")
            supers[-1][2].append((head[3:].strip(), words, []))
        elif head.startswith("# "):
            supers.append((head[2:].strip(), words, []))
        elif head.startswith("- "):
            if not supers or not supers[-1][2]:
                raise ValueError(f"taxonomy: leaf before any mid: {entry!r}")
            supers[-1][2][-1][2].append(Leaf(head[2:].strip(), words))
        else:
            raise ValueError(f"taxonomy: bad entry: {entry!r}")
    return tuple(
        SuperInterest(s_name, s_words, tuple(MidInterest(m, mw, tuple(lv)) for m, mw, lv in mids))
        for s_name, s_words, mids in supers
    )


def _check_words(where: str, words: tuple[str, ...], lo: int, hi: int) -> None:
    if not lo <= len(words) <= hi:
        raise ValueError(f"taxonomy: {where} has {len(words)} words, expected {lo}-{hi}")
    if len(set(words)) != len(words):
        raise ValueError(f"taxonomy: {where} has duplicate words")
    for w in words:
        if not w or w != w.lower() or not w.isascii() or "|" in w:
            raise ValueError(f"taxonomy: {where} has a bad word {w!r}")


def _cross_super_words(supers: tuple[SuperInterest, ...]) -> set[str]:
    """Leaf words that occur in leaves of at least two different super-interests."""
    seen: dict[str, set[int]] = {}
    for si, s in enumerate(supers):
        for m in s.mids:
            for leaf in m.leaves:
                for w in leaf.words:
                    seen.setdefault(w, set()).add(si)
    return {w for w, where in seen.items() if len(where) > 1}


def _validate(supers: tuple[SuperInterest, ...]) -> None:
    if len(supers) != N_SUPERS:
        raise ValueError(f"taxonomy: expected {N_SUPERS} super-interests, got {len(supers)}")
    names: list[str] = []
    for s in supers:
        names.append(s.name)
        _check_words(f"super {s.name!r}", s.words, 5, 8)
        if len(s.mids) != MIDS_PER_SUPER:
            raise ValueError(f"taxonomy: super {s.name!r} has {len(s.mids)} mids")
        for m in s.mids:
            names.append(m.name)
            _check_words(f"mid {m.name!r}", m.words, 5, 8)
            if len(m.leaves) != LEAVES_PER_MID:
                raise ValueError(f"taxonomy: mid {m.name!r} has {len(m.leaves)} leaves")
            for leaf in m.leaves:
                names.append(leaf.name)
                _check_words(f"leaf {leaf.name!r}", leaf.words, 8, 12)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"taxonomy: duplicate names {dup}")
    for n in names:
        if not n or n != n.lower() or not n.isascii():
            raise ValueError(f"taxonomy: bad name {n!r}")
    if len(_cross_super_words(supers)) < 12:
        raise ValueError("taxonomy: too few words shared by leaves of different supers")
    for group, lo in ((GENERIC_WORDS, 20), (PRODUCT_NOUNS, 8), (BRAND_SYLLABLES, 30)):
        if len(group) < lo or len(set(group)) != len(group):
            raise ValueError("taxonomy: word lists too short or with duplicates")


SUPER_INTERESTS: tuple[SuperInterest, ...] = _parse(_RAW)
_validate(SUPER_INTERESTS)


def leaf_paths() -> list[tuple[int, int, int]]:
    """(super, mid, leaf-within-mid) for each of the 96 leaves, in leaf-id order:
    leaf_id = super*16 + mid*4 + leaf."""
    return [
        (s, m, lf)
        for s in range(N_SUPERS)
        for m in range(MIDS_PER_SUPER)
        for lf in range(LEAVES_PER_MID)
    ]


def super_at(super_id: int) -> SuperInterest:
    if not 0 <= super_id < N_SUPERS:
        raise IndexError(f"super_id {super_id} out of range 0..{N_SUPERS - 1}")
    return SUPER_INTERESTS[super_id]


def mid_at(mid_id: int) -> MidInterest:
    """mid_id = super*4 + mid, 0..23."""
    if not 0 <= mid_id < N_MIDS:
        raise IndexError(f"mid_id {mid_id} out of range 0..{N_MIDS - 1}")
    s, m = divmod(mid_id, MIDS_PER_SUPER)
    return SUPER_INTERESTS[s].mids[m]


def leaf_at(leaf_id: int) -> Leaf:
    """leaf_id = super*16 + mid*4 + leaf, 0..95."""
    if not 0 <= leaf_id < N_LEAVES:
        raise IndexError(f"leaf_id {leaf_id} out of range 0..{N_LEAVES - 1}")
    mid_id, lf = divmod(leaf_id, LEAVES_PER_MID)
    return mid_at(mid_id).leaves[lf]
