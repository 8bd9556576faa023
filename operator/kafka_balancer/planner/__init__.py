"""Pure planning: goals and operations over the model produce a plan. No I/O."""
