"""World knowledge: entity content embedded by a real language model, cached, fused and pooled."""
