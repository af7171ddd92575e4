"""A short real computation on the lazy engine: standardize a data set, score it with a small
random projection, and report per-row softmax statistics. Prints the result and the kernels it ran."""
import numpy as np
import nbgrad
from nbgrad import Tensor
from nbgrad.helpers import GlobalCounters

rng = np.random.default_rng(0)
data = rng.standard_normal((1000, 64)).astype(np.float32) * 3 + 1
projection = rng.standard_normal((64, 8)).astype(np.float32) / 8

x = Tensor(data)
standardized = (x - x.mean(0)) / x.std(0)          # lazy: nothing has run yet
scores = standardized @ Tensor(projection)
probs = scores.softmax(-1)
entropy = -(probs * probs.log()).sum(-1)

print("kernels planned for the entropy:", [k.name for k in entropy.schedule()])
GlobalCounters.reset()
values = entropy.numpy()                            # realize: fused kernels run here
print(f"mean entropy {values.mean():.4f} nats (max possible {np.log(8):.4f})")
print(f"ran {GlobalCounters.kernel_count} kernels, compiled {GlobalCounters.compile_count}, "
      f"loaded {GlobalCounters.disk_cache_hits} from the disk cache, {GlobalCounters.time_sum_s * 1e3:.1f} ms in kernels")

# the same computation in numpy, as a check
ref_std = (data - data.mean(0)) / data.std(0, ddof=1)
ref_scores = ref_std @ projection
ref_probs = np.exp(ref_scores - ref_scores.max(-1, keepdims=True))
ref_probs /= ref_probs.sum(-1, keepdims=True)
ref_entropy = -(ref_probs * np.log(ref_probs)).sum(-1)
print("matches numpy:", bool(np.allclose(values, ref_entropy, rtol=1e-4, atol=1e-5)))
