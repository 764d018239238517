"""The cost and policy side: the cost model, the optimal draft length, policies and their replay, this machine, and the decision on hardware (hardware/)."""
