"""The primitive op vocabulary. Every Tensor op is built from these; every renderer implements these."""
from enum import Enum, auto


class Op(Enum):
  """Hashed by identity (each op is one object): graph and kernel keys hash an op per node, and Enum's own hash
  (of the name, in Python) cost more than the rest of a node's record."""
  __hash__ = object.__hash__


class UnaryOps(Op):
  NEG = auto(); RECIP = auto(); SQRT = auto(); EXP = auto(); EXP2 = auto(); LOG = auto(); LOG2 = auto(); SIN = auto(); COS = auto()  # noqa: E702
  TRUNC = auto(); FLOOR = auto(); CEIL = auto(); RINT = auto()  # noqa: E702
  ERF = auto(); ERFC = auto(); LGAMMA = auto(); LOG10 = auto(); EXPM1 = auto(); TANH = auto()   # floats only; LGAMMA is log|gamma(x)|  # noqa: E702
  NOT = auto()                      # logical not of a bool
  CAST = auto(); BITCAST = auto()   # arg: the target DType  # noqa: E702


class BinaryOps(Op):
  ADD = auto(); SUB = auto(); MUL = auto(); DIV = auto(); IDIV = auto(); MOD = auto()  # noqa: E702
  POW = auto()   # floats only: a ** e for a magnitude a > 0 (Tensor.pow handles signs and special cases)
  ATAN2 = auto() # floats only: the angle of the point (b, a), a = y and b = x as in C's atan2(y, x)
  MAX = auto(); MIN = auto(); CMPLT = auto(); CMPEQ = auto(); CMPNE = auto()  # noqa: E702
  AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHR = auto()  # noqa: E702
  GCD = auto()   # ints only: the greatest common divisor of the magnitudes (0 for two zeros)


class TernaryOps(Op):
  WHERE = auto()


class ReduceOps(Op):
  SUM = auto(); PROD = auto(); MAX = auto(); MIN = auto()  # noqa: E702


class LoadOps(Op):
  BUFFER = auto()     # realized data
  CONST = auto()      # arg: a Python scalar; shape () then expanded
  ARANGE = auto()     # arg: (start, step); value start + i * step along the single axis
  EMPTY = auto()      # allocated, contents unspecified
  CONTIGUOUS = auto() # realize the source into a fresh contiguous buffer
  CUSTOM = auto()     # arg: a CustomKernel that fills the buffer from realized sources
  COPY = auto()       # the values of srcs[0] (in flat order) brought to this node's device


ALU_OPS = (UnaryOps, BinaryOps, TernaryOps)
CMP_OPS = (BinaryOps.CMPLT, BinaryOps.CMPEQ, BinaryOps.CMPNE)
CAST_OPS = (UnaryOps.CAST, UnaryOps.BITCAST)   # arg: the target DType
