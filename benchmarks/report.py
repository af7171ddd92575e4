"""Turn a pytest-benchmark JSON file into benchmarks/RESULTS.md.

Usage: python benchmarks/report.py /tmp/bench.json [--torch-spinning /tmp/bench_torch.json] [output.md]
       python benchmarks/report.py --gpu /tmp/bench_cuda.json [output.md]

For each workload it lists the median time of nbgrad, numpy and torch and the ratios
nbgrad/numpy and nbgrad/torch (below 1.0: nbgrad is faster). With --gpu it writes the GPU section
(nbgrad on CUDA against torch on CUDA, from benchmarks/test_bench_cuda.py) and keeps the CPU part.

nbgrad and torch share one OpenMP runtime in a process, whose idle workers nbgrad makes sleep
(nbgrad/__init__.py): each of torch's small parallel ops then wakes them. --torch-spinning adds torch's
medians from a run of its rows with OpenMP's default idle policy (workers spin for a while), which is
how torch runs in a process without nbgrad:
  GOMP_SPINCOUNT=300000 python -m pytest benchmarks/ -k torch --benchmark-json=/tmp/bench_torch.json
"""
import json
import os
import sys
from datetime import datetime
from pathlib import Path

LIBS = ["nbgrad", "numpy", "torch"]
GROUP_TITLES = {
    "elementwise": "Elementwise, 16M float32 (int32 for the divisions, cast to int64 for the int64 one, float16 for the half ones, float64 for the double ones; small: 64K float32; small tanh recurrence: 20 steps of tanh(h @ W), h 4x16, W 16x16) (after warm-up)",
    "movement": "Movement, float32: cat of 8 realized 1024x512 pieces along each axis, and 3 of them stacked on a new last dim; x * 2 + 1 and exp(y) (1024x512 each) computed and joined along axis 1; a 4096x4096 matrix's transpose "
                "copied, and added to the matrix; 16x64x56x56 images copied channels-last; attention's heads (16x8x256x64) merged "
                "to 16x256x512 (after warm-up)",
    "reduce": "Reductions, 16M / 4096x4096 float32 (any: of x > 3 along rows); softmax over attention's heads merged back "
              "(16x8x256x64 to 16x256x512) (after warm-up)",
    "norm": "Normalization, float32: GroupNorm of 8 groups on 16x64x56x56 images; layernorm of the rows of a 4096x4096 "
            "matrix (after warm-up)",
    "scan": "Cumulative sums of a 4096x4096 float32 matrix along each axis (after warm-up)",
    "sort": "Stable sorts, float32: 1M values; the rows of a 1024x1024 matrix, its columns' order (argsort), and the "
            "top 10 of each row; the top 1000 of 1M values; 100k values placed among 1M sorted ones (searchsorted) (after warm-up)",
    "loss": "CTC loss (per sample, no reduction) of 200 frames x 32 samples x 40 classes float32, 20 to 40 labels each; "
            "and nll_loss (mean) with its gradient of 512x1024 float32 log-probabilities; numpy has none, torch's answer is the "
            "reference (after warm-up)",
    "pool": "Pooling with its gradient (of the sum of squares), float32: max_pool2d 3x3, stride 2, padding 1 of "
            "16x64x112x112 (a ResNet stem's); adaptive_avg_pool2d of 16x64x28x28 to 5x5 (windows of 6 or 7); that map "
            "upsampled 2x bilinearly, and 2x nearest with the gradient; numpy has none, torch's answer is the reference "
            "(after warm-up)",
    "attention": "Causal scaled_dot_product_attention of 8 samples x 8 heads x 256 positions x 64, float32: the output "
                 "and the gradients of queries, keys and values, summed into one result; numpy has none, torch's answer "
                 "is the reference (after warm-up)",
    "random": "16M float32 random values from a seeded generator (after warm-up)",
    "optim": "One Adam step of four 1024x1024 and four 1024 float32 parameters (after warm-up)",
    "matmul": "Matrix products, square float32 (after warm-up)",
    "conv": "conv2d 3x3, stride 1, padding 1, float32: ResNet-style layers, nbgrad's choice, Winograd (WINO=1) and "
            "direct (WINO=0) against torch (after warm-up)",
    "train": "One SGD step with cross-entropy: MLP 784-512-512-10 on a batch of 256; CNN (conv 32 3x3, "
             "max-pool, conv 64 3x3, max-pool, linear) on 32x1x28x28; transformer (a tied embedding of 512 tokens x 128, "
             "one pre-norm block of 4-head causal attention and a 4x GELU MLP) on 8 sequences of 64 tokens (after warm-up)",
    "indexing": "Indexed reads: x[idx], 100k int64 indices into 1M float32; m[idx, 1], column 1 of a 1M x 16 float32 "
                "matrix at 100k int64 indices; m[:, idx], 512 columns of a 1024x1024 float32 matrix; gathers along its rows, "
                "of every element and of one label each; an embedding table 50000x256 float32 read by a 64x128 token grid, and "
                "its gradient; m[2:10, ::2][3] of a 64x64 float32 matrix, copied out (after warm-up)",
    "python": "Element by element from Python: a float32 tensor made from a list of 1M Python floats; 1000 elements of a "
              "computed float32 vector read one at a time (x[i].item()); 1000 written one at a time (z[i] = 1.5) (after warm-up)",
    "compile": "First call in a fresh process, relu(x*y+z) (rand for first_call_rand) on 1M float32 (import excluded)",
    "conv5x5": "conv2d 5x5 forward and both gradients, batch 128, 32 to 32 channels, 24x24 (after warm-up)",
    "train-busy-core": "The same SGD steps while another process keeps one of the cores busy (after warm-up)",
}


def installed_versions():
    versions = {}
    for name in ("nbgrad", "numpy", "torch", "numba"):
        try:
            module = __import__(name)
            versions[name] = getattr(module, "__version__", "unversioned")
        except ImportError:
            versions[name] = "not installed"
    return versions


def workload_name(bench):
    """`test_reduce_sum_axis1[torch]` -> `reduce_sum_axis1`."""
    name = bench["name"].split("[", 1)[0]
    name = name[len("test_"):] if name.startswith("test_") else name
    others = [f"{v}" for k, v in sorted((bench.get("params") or {}).items()) if k != "lib"]
    return "_".join([name] + others)


def library_name(bench):
    params = bench.get("params") or {}
    if "lib" in params:
        return params["lib"]
    return bench["name"].rsplit("[", 1)[-1].rstrip("]")


def format_seconds(seconds):
    if seconds is None:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def format_ratio(numerator, denominator):
    if numerator is None or not denominator:
        return "-"
    return f"{numerator / denominator:.2f}x"


def collect(benchmarks):
    """{group: {workload: {lib: bench}}}, in the order the benchmarks ran."""
    groups = {}
    for bench in benchmarks:
        group = bench.get("group") or "ungrouped"
        groups.setdefault(group, {}).setdefault(workload_name(bench), {})[library_name(bench)] = bench
    return groups


def nbgrad_notes(bench):
    info = bench.get("extra_info") or {}
    notes = []
    if "kernels_per_call" in info:
        notes.append(f"{info['kernels_per_call']} kernel(s)")
    if "compiles" in info:
        notes.append(f"{info['compiles']} compile(s)")
    if "disk_cache_hits" in info:
        notes.append(f"{info['disk_cache_hits']} disk-cache hit(s)")
    if "second_call_s" in info:
        notes.append(f"second call {format_seconds(info['second_call_s'])}")
    return ", ".join(notes)


def torch_medians(data) -> dict:
    """{(group, workload): torch's median} of a run."""
    return {(group, workload): by_lib["torch"]["stats"]["median"]
            for group, workloads in collect(data.get("benchmarks", [])).items()
            for workload, by_lib in workloads.items() if "torch" in by_lib}


def render(data, torch_spinning=None):
    machine = data.get("machine_info") or {}
    versions = dict(installed_versions(), **(machine.get("libraries") or {}))
    when = data.get("datetime")
    try:
        when = datetime.fromisoformat(when).strftime("%Y-%m-%d %H:%M %Z").strip()
    except (TypeError, ValueError):
        when = when or datetime.now().strftime("%Y-%m-%d %H:%M")
    cores = machine.get("cores") or os.cpu_count()
    lines = [
        "# nbgrad benchmark results",
        "",
        f"- Date: {when}",
        f"- Machine: {machine.get('cpu_model', 'unknown CPU')}, {cores} cores"
        + (f" ({machine['system']} {machine.get('release', '')})" if machine.get("system") else ""),
        f"- Threads: torch {machine.get('torch_threads', '?')}, numba {machine.get('numba_threads', '?')}",
        f"- numpy's BLAS (nbgrad's products call it too): {machine.get('blas', 'unknown')}",
        "- Versions: " + ", ".join(f"{name} {versions.get(name, '?')}" for name in ("nbgrad", "numpy", "torch", "numba")),
        f"- Python: {machine.get('python_version', sys.version.split()[0])}",
        "",
        "Medians. Ratios are nbgrad time / peer time: below 1.00x nbgrad is faster.",
        "Regenerate: `python -m pytest benchmarks/ --benchmark-json=/tmp/bench.json && "
        "python benchmarks/report.py /tmp/bench.json`",
        *(["", "torch, spinning: torch's median in a run of its rows where OpenMP's idle workers spin for a while "
            "(GOMP_SPINCOUNT=300000, about libgomp's default), as torch runs without nbgrad. In one process the two "
            "share one OpenMP runtime, whose workers nbgrad makes sleep, and each of torch's small parallel ops "
            "then wakes them. Its run: `GOMP_SPINCOUNT=300000 python -m pytest benchmarks/ -k torch "
            "--benchmark-json=/tmp/bench_torch.json`, then `python benchmarks/report.py /tmp/bench.json "
            "--torch-spinning /tmp/bench_torch.json`."] if torch_spinning else []),
    ]
    for group, workloads in collect(data.get("benchmarks", [])).items():
        if group == "conv":
            lines += ["", f"## {GROUP_TITLES[group]}", ""] + render_conv(workloads)
            continue
        spinning = " torch, spinning | nbgrad/torch, spinning |" if torch_spinning else ""
        lines += ["", f"## {GROUP_TITLES.get(group, group)}", "",
                  f"| workload | nbgrad | numpy | torch | nbgrad/numpy | nbgrad/torch |{spinning} nbgrad notes |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if torch_spinning else "") + " --- |"]
        for workload, by_lib in workloads.items():
            medians = {lib: by_lib[lib]["stats"]["median"] if lib in by_lib else None for lib in LIBS}
            row = [workload] + [format_seconds(medians[lib]) for lib in LIBS]
            row += [format_ratio(medians["nbgrad"], medians["numpy"]), format_ratio(medians["nbgrad"], medians["torch"])]
            if torch_spinning:
                spinning_median = torch_spinning.get((group, workload))
                row += [format_seconds(spinning_median), format_ratio(medians["nbgrad"], spinning_median)]
            row.append(nbgrad_notes(by_lib["nbgrad"]) if "nbgrad" in by_lib else "")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


CONV_LIBS = ["nbgrad", "nbgrad-wino", "nbgrad-direct", "torch"]


def render_conv(workloads):
    """Fastest time and effective GFLOP/s of each choice; how far nbgrad's choice is from the faster of
    Winograd and direct, and which path it took; the forward's extra memory over the layer's input plus output."""
    lines = ["Fastest call of each (medians move by 30% or more between runs on this shared machine). Effective "
             "GFLOP/s = the direct convolution's FLOPs (x3 with backward) / that time. The default (nbgrad) row runs "
             "the same kernels as the forced row of the path it chose, so the chosen path's time is the faster of "
             "those two rows; chosen / faster path compares it with the faster of Winograd and direct, and says "
             "whether the rule chose well apart from the machine's drift between rows.", "",
             "| workload | " + " | ".join(CONV_LIBS) + " | chosen / faster path | nbgrad/torch | Winograd extra memory |",
             "| --- |" + " ---: |" * (len(CONV_LIBS) + 3)]
    for workload, by_lib in workloads.items():
        fastest = {lib: by_lib[lib]["stats"]["min"] if lib in by_lib else None for lib in CONV_LIBS}
        cells = [f"{format_seconds(fastest[lib])} ({by_lib[lib]['extra_info'].get('gflops', '?')} GF/s)" if lib in by_lib else "-"
                 for lib in CONV_LIBS]
        memory = (by_lib.get("nbgrad-wino", {}).get("extra_info") or {}).get("extra_memory_ratio")
        path = (by_lib.get("nbgrad", {}).get("extra_info") or {}).get("path")
        path_times = {name: fastest[lib] for name, lib in (("Winograd", "nbgrad-wino"), ("direct", "nbgrad-direct")) if fastest[lib]}
        if path in path_times and fastest["nbgrad"]: path_times[path] = min(path_times[path], fastest["nbgrad"])
        choice = format_ratio(path_times.get(path), min(path_times.values(), default=None)) + (f" ({path})" if path else "")
        lines.append("| " + " | ".join([workload, *cells, choice,
                                        format_ratio(fastest["nbgrad"], fastest["torch"]),
                                        f"{memory}x in+out" if memory is not None else "-"]) + " |")
    return lines


GPU_MARKER = "<!-- GPU results: written by benchmarks/gpu_check.sh -->"
GPU_PENDING = GPU_MARKER + "\n\n# GPU results\n\nStill to be measured: no GPU has run benchmarks/gpu_check.sh yet.\n"


def rate(bench):
    info = bench.get("extra_info") or {}
    if "GB/s" in info: return f"{info['GB/s']} GB/s"
    if "GFLOP/s" in info: return f"{info['GFLOP/s']} GFLOP/s"
    return "-"


def render_gpu(data):
    machine = data.get("machine_info") or {}
    lines = [GPU_MARKER, "", "# GPU results", "",
                      f"- Date: {data.get('datetime', '?')[:16]}", f"- GPU: {machine.get('gpu', 'unknown GPU')}",
                      "- Versions: " + ", ".join(f"{k} {v}" for k, v in (machine.get("gpu_libraries") or {}).items()),
                      "", "nbgrad on CUDA against torch on CUDA, medians of 20 synchronized calls. "
                      "Regenerate on a GPU machine: `bash benchmarks/gpu_check.sh`."]
    for group, workloads in collect(data.get("benchmarks", [])).items():
        lines += ["", f"## {group}", "", "| workload | nbgrad | torch | nbgrad/torch | nbgrad rate | torch rate | torch copy | nbgrad notes |",
                            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for workload, by_lib in workloads.items():
            medians = {lib: by_lib[lib]["stats"]["median"] if lib in by_lib else None for lib in ("nbgrad", "torch", "torch_copy")}
            row = [workload, format_seconds(medians["nbgrad"]), format_seconds(medians["torch"]),
                          format_ratio(medians["nbgrad"], medians["torch"])]
            row += [rate(by_lib[lib]) if lib in by_lib else "-" for lib in ("nbgrad", "torch", "torch_copy")]
            row.append(nbgrad_notes(by_lib["nbgrad"]) if "nbgrad" in by_lib else "")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def split_gpu_section(text):
    """(CPU part, GPU section) of an existing RESULTS.md."""
    if GPU_MARKER not in text: return text, GPU_PENDING
    cpu, gpu = text.split(GPU_MARKER, 1)
    return cpu, GPU_MARKER + gpu


def main(argv):
    gpu = "--gpu" in argv
    argv = [a for a in argv if a != "--gpu"]
    torch_spinning = None
    if "--torch-spinning" in argv:
        at = argv.index("--torch-spinning")
        if at + 1 >= len(argv): sys.exit("--torch-spinning needs a benchmark JSON file")
        with open(argv[at + 1]) as f:
            torch_spinning = torch_medians(json.load(f))
        argv = argv[:at] + argv[at + 2:]
    if len(argv) not in (2, 3):
        sys.exit(f"usage: {argv[0]} [--gpu] BENCHMARK_JSON [--torch-spinning TORCH_JSON] [OUTPUT_MD]")
    with open(argv[1]) as f:
        data = json.load(f)
    output = Path(argv[2]) if len(argv) == 3 else Path(__file__).resolve().parent / "RESULTS.md"
    cpu_part, gpu_part = split_gpu_section(output.read_text() if output.exists() else "")
    if gpu: text = cpu_part.rstrip("\n") + "\n\n" + render_gpu(data)
    else: text = render(data, torch_spinning) + "\n" + gpu_part
    output.write_text(text)
    print(text)
    print(f"written to {output}")


if __name__ == "__main__":
    main(sys.argv)
