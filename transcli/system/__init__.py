"""Files, streams, locks, signals and the machine: what every command stands on."""
