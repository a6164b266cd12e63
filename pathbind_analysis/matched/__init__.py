"""PathView-Bench's Matched-Slide Analysis: perception on the slides a model answered correctly elsewhere."""
