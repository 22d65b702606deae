"""Executors make decisions real: launch a trial on atoms, ask it to checkpoint and exit, report events."""
