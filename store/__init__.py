"""Storage: the event log (SQLAlchemy), snapshots, partition logs (segments) and the remote tier."""
