#!/bin/bash
# hir ab (and hir run/demo) --bootstrap 1 is accepted (range 1..10,000): the "95% CI" is one resample,
# a zero-width interval that need not contain the point estimate, and the verdict says "significant"
H=/work/notes/s45/fuzz3; HIR=/work/main/.venv/bin/hir
T=$(mktemp -d $H/tmp_f04.XXXX); cd $T
/work/main/.venv/bin/python $H/gen.py data >/dev/null
nice -n 10 $HIR ab --data data --out ab --bootstrap 1; echo "rc=$?"
