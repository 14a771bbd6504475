"""adjoint package."""
