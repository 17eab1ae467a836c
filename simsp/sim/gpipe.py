"""GPipe's walk in closed form, for many configurations at once (numpy over rows).

GPipe runs every forward, then every backward (schedule/classic.py), and a send blocks its
sender for one p2p time, so the forwards are a flow shop over the stages (each microbatch's
forward on stage s waits for stage s - 1's and for the stage's previous forward) and so are the
backwards, from the last stage down; stage s's first backward also waits for its own last
forward. On such a grid, where an action's time depends only on its stage, the longest path
from one corner to another through stages j in [a, b] and k + 1 microbatches is
sum_j t_j + k max_j t_j (it visits every stage once and spends its k extra microbatches on the
slowest). With t_s = F_s (+ p2p, s < p - 1) and u_s = B_s (+ p2p, s > 0):

    end of forward m - 1 on s:  EF(s) = sum_{j <= s} t_j + (m - 1) max_{j <= s} t_j
    end of backward k on s:     EB(s, k) = max_{s' >= s} EF(s') + sum_{j=s}^{s'} u_j
                                                        + k max_{s <= j <= s'} u_j

and each stage's last backward starts at max(EB(s, m - 2) (EF(s) for m = 1), EB(s + 1, m - 1)),
the times pipeline_time.walk finds, to rounding (tests/test_analytic.py, 1e-12 against the engine).
"""

import numpy as np


def gpipe_ends(fwd, bwd, p2p, m):
    """(end of each stage's last backward and send, start and end of that backward), arrays of
    shape (rows, p), for `fwd`, `bwd` (rows, p) each stage's forward and backward, `p2p`
    (rows,) one send and `m` (rows,) microbatches."""
    fwd, bwd = np.asarray(fwd, dtype=float), np.asarray(bwd, dtype=float)
    rows, p = fwd.shape
    c = np.asarray(p2p, dtype=float)
    m = np.asarray(m, dtype=float)
    t = [fwd[:, s] + c if s < p - 1 else fwd[:, s] for s in range(p)]
    u = [bwd[:, s] + c if s > 0 else bwd[:, s] for s in range(p)]
    forward_end, total, slowest = [], np.zeros(rows), np.zeros(rows)
    for s in range(p):
        total, slowest = total + t[s], np.maximum(slowest, t[s])
        forward_end.append(total + (m - 1) * slowest)

    def backward_end(s: int, k):
        """EB(s, k) for each row's k (>= 0)."""
        best = np.full(rows, -np.inf)
        total, slowest = np.zeros(rows), np.zeros(rows)
        for top in range(s, p):
            total, slowest = total + u[top], np.maximum(slowest, u[top])
            best = np.maximum(best, forward_end[top] + total + k * slowest)
        return best

    end, start, ran = np.zeros((rows, p)), np.zeros((rows, p)), np.zeros((rows, p))
    for s in range(p - 1, -1, -1):
        before = np.where(m >= 2, backward_end(s, np.maximum(m - 2, 0)), forward_end[s])
        if s < p - 1:
            before = np.maximum(before, end[:, s + 1])
        start[:, s] = before
        ran[:, s] = before + bwd[:, s]
        end[:, s] = ran[:, s] + c if s > 0 else ran[:, s]
    return end, start, ran
