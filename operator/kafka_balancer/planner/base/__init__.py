"""The planner's base: the working state and its scope, how far a placement is from each goal, which
moves a step may make and what a batch of moves must keep. Every stage builds on these."""
