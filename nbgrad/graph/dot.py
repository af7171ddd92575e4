"""A schedule's graph as Graphviz dot source (render it with `dot -Tsvg graph.dot -o graph.svg`): each node a box
with its op, shape and dtype, an edge from each source, and the nodes each kernel computes drawn inside a frame
named after the kernel. Buffers computed before are ellipses; the nodes the kernels store have a double border."""
from __future__ import annotations
from nbgrad.graph.lazy import LazyBuffer
from nbgrad.graph.schedule import Kernel


def graph_dot(schedule: list[Kernel]) -> str:
  number: dict[int, int] = {}
  nodes: list[LazyBuffer] = []
  kernel_of: dict[int, int] = {}   # node number -> the first kernel that computes it (a node may be recomputed)

  def numbered(node: LazyBuffer) -> int:
    if id(node) not in number:
      number[id(node)] = len(nodes)
      nodes.append(node)
    return number[id(node)]

  for k, kernel in enumerate(schedule):
    read = {id(node) for node in kernel.inputs}
    stack = [kernel.output] + list(kernel.also)
    while stack:
      node = stack.pop()
      n = numbered(node)
      if n in kernel_of or id(node) in read or node.buffer is not None: continue
      kernel_of[n] = k
      stack += [s.base for s in node.srcs]
  stored = {id(node) for kernel in schedule for node in [kernel.output] + list(kernel.also)}
  edges = [(numbered(src.base), n, src is not src.base) for n, node in enumerate(nodes) if n in kernel_of for src in node.srcs]

  lines = ["digraph nbgrad {", '  node [shape=box, fontname="monospace", fontsize=10];']
  for k, kernel in enumerate(schedule):
    lines += [f"  subgraph cluster_{k} {{", f'    label="{_escaped(kernel.name or kernel.kind)}"; color=gray;']
    lines += [f"    {_node_line(n, node, id(node) in stored)}" for n, node in enumerate(nodes) if kernel_of.get(n) == k]
    lines.append("  }")
  lines += [f"  {_node_line(n, node, False)}" for n, node in enumerate(nodes) if n not in kernel_of]
  lines += [f"  n{a} -> n{b}" + (' [label="view", fontsize=8];' if through_view else ";") for a, b, through_view in edges]
  return "\n".join(lines + ["}"]) + "\n"


def _node_line(n: int, node: LazyBuffer, stored: bool) -> str:
  if node.buffer is not None: return f'n{n} [label="{_escaped(f"buffer {node.shape} {node.dtype.name}")}", shape=ellipse];'
  arg = node.arg if isinstance(node.arg, (int, float, tuple)) else getattr(node.arg, "name", None)   # a dtype's name
  label = node.op.name + ("" if arg is None else f" {arg}") + f"\n{node.shape} {node.dtype.name}"
  return f'n{n} [label="{_escaped(label)}"' + (", peripheries=2];" if stored else "];")


def _escaped(text: str) -> str: return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
