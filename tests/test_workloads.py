import math

import numpy as np
import pytest

from gcbench.core.errors import UsageError
from gcbench.measuring.workloads import WORKLOADS, get_workload, init_params


def test_lenet5_has_the_model_zoo_parameter_count():
    # conv 5x5 1->6 (156) + conv 5x5 6->16 (2,416) + 256->120 (30,840) + 120->84 (10,164) + 84->10 (850)
    assert WORKLOADS["lenet5"].params_per_network == 44_426


def test_mlp_is_about_5000_parameters():
    assert WORKLOADS["mlp"].params_per_network == 784 * 6 + 6 + 6 * 16 + 16 + 16 * 10 + 10 == 4_992
    assert WORKLOADS["mlp"].default_networks == 200


def test_vit_is_twelve_blocks_of_eight_heads():
    vit = WORKLOADS["vit"].vit
    assert (vit.depth, vit.heads) == (12, 8)
    assert vit.dim % vit.heads == 0
    shapes = WORKLOADS["vit"].param_shapes()
    assert sum(math.prod(s) for s in shapes.values()) == WORKLOADS["vit"].params_per_network


def test_init_params_deterministic_per_network():
    w = WORKLOADS["lenet5"]
    a = init_params(w, seed=1, networks=3)
    b = init_params(w, seed=1, networks=1)
    for key in a[0]:
        np.testing.assert_array_equal(a[0][key], b[0][key])
        assert a[0][key].dtype == np.float32
    assert not np.array_equal(a[0]["layer0/w"], a[1]["layer0/w"])
    assert sum(v.size for v in a[0].values()) == 44_426
    assert np.all(a[0]["layer2/b"] == 0)
    limit = math.sqrt(6 / (256 + 120))
    assert np.abs(a[0]["layer2/w"]).max() <= limit


def test_unknown_workload_lists_valid_ones():
    with pytest.raises(UsageError, match="valid workloads: mlp, lenet5, vit"):
        get_workload("resnet")
