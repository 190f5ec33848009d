"""Example device agents: recognizers for devices.agent_core, run on a device or the emulator."""
