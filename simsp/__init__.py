"""simsp: simulate one training iteration of a large transformer under TP/SP/PP/DP.

Implements Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (MLSys 2023, arXiv 2205.05198). See DESIGN.md for the data flow.
"""

__version__ = "0.1.0"
