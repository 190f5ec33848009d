"""Stand-alone example participant programs and demo-data tools for onsite."""
