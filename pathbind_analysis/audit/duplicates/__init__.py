"""Content-level near-duplicate audit: perceptual hashes of training and test images, matched by Hamming distance."""
