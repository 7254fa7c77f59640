"""The worker's services beside the claim loop: the single-worker lock, retention and periodic
jobs."""
