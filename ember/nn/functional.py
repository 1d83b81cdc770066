"""torch.nn.functional-style names for Ember's ops (``from ember.nn import functional as F``), so
custom modules read like their torch originals. Everything here is defined in ember/ops."""
from ..ops.activation import *  # noqa: F401,F403
from ..ops.attention import *  # noqa: F401,F403
from ..ops.conv import *  # noqa: F401,F403
from ..ops.indexing import *  # noqa: F401,F403
from ..ops.linalg import *  # noqa: F401,F403
from ..ops.loss import *  # noqa: F401,F403
from ..ops.movement import pad  # noqa: F401
from ..ops.norm import *  # noqa: F401,F403
from ..ops.reduce import log_softmax, softmax  # noqa: F401
