"""Unit constants, so that numbers in the code carry their unit by name."""

KIB = 1024
MIB = 1024**2
GIB = 1024**3
GB = 1e9
TERA = 1e12
US = 1e-6
MS = 1e-3

BYTES_16BIT = 2
BYTES_FP32 = 4
BYTES_MASK = 1
