"""Control models that bracket what a vision-language model should achieve."""
