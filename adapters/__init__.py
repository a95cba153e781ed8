"""The real world behind the ports: processes, signals, files, locks, the clock."""
