"""The pure core: what to do next, decided from values; the world is reached through ports."""
