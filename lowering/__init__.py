"""lowering package."""
