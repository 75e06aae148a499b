"""Shoal's actors: thin Thespian shells around pure deciders (share, rlmm, controller)."""
