"""The training loop and what it is made of: objective, optimisation, state, validation."""
