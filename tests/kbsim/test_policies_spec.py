"""Policy specs: names, defaults from the paper, canonical text, one-sentence errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbsim.policies import POLICY_NAMES, new_pool, new_state, parse_policy
from kbsim.policies.spec import (
    F_ALPHA,
    F_C,
    F_EPS,
    F_PARENT_TEMPERATURE,
    F_TEMPERATURE,
    F_THETA,
    I_BUFFER,
    I_FRONTIER,
    I_K,
    I_MASK,
    I_PARENT,
    I_TAU,
    I_WARM,
    I_WARMUP,
    PARENT_HEADROOM,
    PARENT_RULES,
    PARENT_SPEED,
)


def test_every_design_name_parses_to_its_own_kind() -> None:
    assert POLICY_NAMES == (
        "kernelband-v2", "kernelband-v1", "bon", "greedy", "random", "ucb-flat", "eps-greedy",
        "thompson", "kernelband-v2-nomask", "explore",
    )
    kinds = [parse_policy(name).kind for name in POLICY_NAMES]
    assert kinds == list(range(len(POLICY_NAMES)))
    assert [str(parse_policy(name)) for name in POLICY_NAMES] == list(POLICY_NAMES)


def test_paper_defaults() -> None:
    v2 = parse_policy("kernelband-v2")
    assert v2.params == {"K": 3, "tau": 10, "c": 2.0, "theta_sat_sm": 75.0,
                         "theta_sat_dram": 75.0, "theta_sat_l2": 75.0, "temperature": 1.0,
                         "mask": 1, "iters": 10, "parent": "headroom",
                         "parent_temperature": 0.1, "frontier": 0}
    assert (v2.iparams[I_K], v2.iparams[I_TAU], v2.iparams[I_MASK]) == (3, 10, 1)
    assert v2.fparams[F_C] == 2.0 and v2.fparams[F_TEMPERATURE] == 1.0
    assert list(v2.fparams[F_THETA:F_THETA + 3]) == [75.0, 75.0, 75.0]
    v1 = parse_policy("kernelband-v1")
    assert (v1.iparams[I_K], v1.iparams[I_BUFFER], v1.iparams[I_WARM], v1.iparams[I_WARMUP]) == (
        3, 500, 1000, 3)
    assert v1.fparams[F_ALPHA] == 0.5
    assert parse_policy("eps-greedy").fparams[F_EPS] == 0.1
    assert parse_policy("ucb-flat").fparams[F_C] == math.sqrt(2.0)  # UCB1
    assert parse_policy("kernelband-v2-nomask").iparams[I_MASK] == 0


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("kernelband-v2:K=5,c=1.0,theta_sat=80", "kernelband-v2:theta_sat=80,K=5,c=1"),
        (" kernelband-v2 : K = 5 ", "kernelband-v2:K=5"),
        ("KERNELBAND-V2:K=3", "kernelband-v2"),
        ("kernelband-v2:theta_sat_sm=60,theta_sat=80",
         "kernelband-v2:theta_sat_sm=60,theta_sat_dram=80,theta_sat_l2=80"),
        ("kernelband-v2:theta_sat=80,theta_sat_sm=60",
         "kernelband-v2:theta_sat_sm=60,theta_sat_dram=80,theta_sat_l2=80"),
        ("kernelband-v2:mask=0", "kernelband-v2:mask=0"),
        ("eps-greedy:eps=0.25", "eps-greedy:eps=0.25"),
        ("thompson:prior_a=2,prior_b=0.5", "thompson:prior_a=2,prior_b=0.5"),
        ("ucb-flat:c=2", "ucb-flat:c=2"),
        ("kernelband-v2:parent=headroom", "kernelband-v2"),
        ("kernelband-v2:frontier=4,parent=Speed", "kernelband-v2:parent=speed,frontier=4"),
        ("thompson:parent=fastest", "thompson:parent=fastest"),
        ("kernelband-v2-nomask:parent_temperature=0.5",
         "kernelband-v2-nomask:parent_temperature=0.5"),
        ("kernelband-v1:alpha=1,buffer=100,warm=0", "kernelband-v1:alpha=1,buffer=100,warm=0"),
    ],
)
def test_canonical_text_round_trips(text: str, canonical: str) -> None:
    spec = parse_policy(text)
    assert str(spec) == canonical
    again = parse_policy(str(spec))
    assert again == spec and hash(again) == hash(spec)
    assert np.array_equal(again.fparams, spec.fparams)
    assert np.array_equal(again.iparams, spec.iparams)


def test_parent_rule_reaches_the_kernel_arrays() -> None:
    spec = parse_policy("eps-greedy:parent=speed,parent_temperature=0.25,frontier=3")
    assert spec.params["parent"] == "speed"
    assert spec.iparams[I_PARENT] == PARENT_RULES.index("speed") == PARENT_SPEED
    assert spec.fparams[F_PARENT_TEMPERATURE] == 0.25 and spec.iparams[I_FRONTIER] == 3
    assert parse_policy("kernelband-v2").iparams[I_PARENT] == PARENT_HEADROOM


def test_per_dimension_theta_reaches_the_kernel_arrays() -> None:
    spec = parse_policy("kernelband-v2:theta_sat=80,theta_sat_dram=50")
    assert list(spec.fparams[F_THETA:F_THETA + 3]) == [80.0, 50.0, 80.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty policy spec; expected one of kernelband-v2"),
        ("kernelband-v3", "unknown policy 'kernelband-v3'; expected one of kernelband-v2, "),
        ("ucb", "unknown policy 'ucb'"),
        ("kernelband-v2:Q=1", "unknown parameter 'Q' for policy 'kernelband-v2'; valid "
                              "parameters: K, tau, c"),
        ("bon:K=3", "unknown parameter 'K' for policy 'bon'; valid parameters: none"),
        ("ucb-flat:K=3", "valid parameters: c"),
        ("kernelband-v2-nomask:mask=1", "unknown parameter 'mask'"),
        ("kernelband-v2:K=0", "parameter K of policy 'kernelband-v2' must be an integer >= 1"),
        ("kernelband-v2:K=2.5", "must be an integer >= 1 and <= 64, got '2.5'"),
        ("kernelband-v2:K=abc", "must be an integer"),
        ("kernelband-v2:c=-1", "parameter c of policy 'kernelband-v2' must be a number >= 0"),
        ("kernelband-v2:c=nan", "must be a number"),
        ("kernelband-v2:c=inf", "must be a number"),
        ("kernelband-v2:theta_sat=0", "must be a number > 0 and <= 100"),
        ("kernelband-v2:theta_sat_l2=101", "parameter theta_sat_l2"),
        ("kernelband-v2:temperature=0", "parameter temperature"),
        ("kernelband-v2:mask=2", "parameter mask"),
        ("eps-greedy:eps=1.5", "parameter eps of policy 'eps-greedy' must be a number >= 0 and"),
        ("thompson:prior_a=0", "parameter prior_a"),
        ("kernelband-v1:lr=0", "parameter lr"),
        ("kernelband-v2:K", "bad parameter 'K' in policy spec"),
        ("kernelband-v2:K=", "bad parameter 'K='"),
        ("kernelband-v2:K=3,,c=1", "bad parameter ''"),
        ("kernelband-v2:K=3,K=4", "parameter 'K' given twice"),
        ("kernelband-v2:parent=best", "parameter parent of policy 'kernelband-v2' must be one "
                                      "of headroom, fastest, speed, got 'best'"),
        ("kernelband-v2:parent_temperature=0", "parameter parent_temperature"),
        ("kernelband-v2:frontier=-1", "parameter frontier"),
        ("greedy:parent=fastest", "unknown parameter 'parent' for policy 'greedy'"),
        ("kernelband-v1:parent=speed", "unknown parameter 'parent' for policy 'kernelband-v1'"),
    ],
)
def test_bad_specs_get_one_clear_sentence(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_policy(text)
    text_out = str(info.value)
    assert message in text_out
    assert "\n" not in text_out and text_out.count(". ") == 0


def test_state_and_pool_validate_sizes() -> None:
    spec = parse_policy("kernelband-v2")
    with pytest.raises(ValueError, match="max_pool must be >= 1"):
        new_pool(0)
    with pytest.raises(ValueError, match="max_pool must be >= 1"):
        new_state(spec, 0)
    with pytest.raises(ValueError, match="target .* is needed for 4 strategies"):
        new_state(spec, 10, n_strategies=4)
    with pytest.raises(ValueError, match="target must hold 2 values in 0..2"):
        new_state(spec, 10, n_strategies=2, target=np.array([0, 3]))
    state = new_state(spec, 10, n_strategies=2, target=np.array([0, 2]))
    assert state.mu.shape == (3, 2) and (state.mu == 0.5).all() and (state.cnt == 1).all()
    assert (state.rep == -1).all()
