"""Measuring (an edge): the profiler that captures GEMM, attention, collective and memory-bound
timings on a GPU (`profiler/`, the only user of torch), Kineto traces read and matched to the
model (`kineto/`), and fitting a hardware file to a user's measured runs (`runs`, `fit`, and
`fit_work`: what a fit will cost, counted before it starts)."""
