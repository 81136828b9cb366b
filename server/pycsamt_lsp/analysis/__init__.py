"""Analysis of code the user writes: import validation, buffers, completion contexts."""
