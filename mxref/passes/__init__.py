"""Graph passes: infer_shape, infer_type, gradient, plan_memory, mirror (one file each)."""
