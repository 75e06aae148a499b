"""Tests of the share domain: share-partition state machine, share coordinator state, record codec, membership and the ShareGroupActor."""
