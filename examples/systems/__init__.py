"""Example participant systems speaking the onsite serve/exec protocols."""
