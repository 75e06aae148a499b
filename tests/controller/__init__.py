"""Tests of the controller domain (pure model, actor, supervision)."""
