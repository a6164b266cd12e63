"""PathVG (Zhong et al. 2025): pathology referring expressions with boxes, testA and testB, for attention grounding."""
