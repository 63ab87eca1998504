"""The runtime: the one Program (device, caches, counters), arch selection, argument specialisation and the
launch sequence. Imports backends lazily so `import wgkern` stays light."""
