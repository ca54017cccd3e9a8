"""State dicts as flat tensor names: the naming rule of tensorkit.ckpt.

A state dict is walked depth first: dicts (keys str or int) and lists or tuples are
descended into; torch tensors and numpy arrays are the tensors, saved under their path
joined with "." ({"model": {"0.weight": w}} -> "model.0.weight"); None, bool, int,
float and str are plain values. The walk also yields a skeleton (JSON) of the whole
structure, with tensors replaced by their names and values kept, so that a step can be
read back into the same nesting (int keys stay ints) and plain values restored.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

_SCALARS = (type(None), bool, int, float, str)


def is_tensor(obj: Any) -> bool:
    """True for a torch tensor or a numpy array (numpy and torch imported only if in use)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


class Leaf:
    """A tensor of the state dict, or a plain value with the container it sits in."""

    __slots__ = ("name", "value", "container", "key")

    def __init__(self, name: str, value: Any, container: Any, key: Any) -> None:
        self.name, self.value, self.container, self.key = name, value, container, key


def flatten(state: Any) -> Tuple[Dict[str, Leaf], Dict[str, Leaf], Any]:
    """Split `state` into its tensors and its plain values, both keyed by flat name,
    and its skeleton. Raises TypeError for anything else, ValueError for two paths
    with the same flat name."""
    tensors: Dict[str, Leaf] = {}
    values: Dict[str, Leaf] = {}

    def add(table: Dict[str, Leaf], leaf: Leaf) -> None:
        if leaf.name in tensors or leaf.name in values:
            raise ValueError(f"two entries of the state dict are both named '{leaf.name}'")
        table[leaf.name] = leaf

    def walk(obj: Any, name: str, container: Any, key: Any) -> Any:
        if is_tensor(obj):
            if not name:
                raise TypeError("the state dict is a single tensor: pass a dict of named tensors")
            add(tensors, Leaf(name, obj, container, key))
            return {"t": name}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise TypeError(f"state dict key {k!r} at '{name}' is not a str or int")
                if isinstance(k, str) and not k:
                    raise TypeError(f"empty key in the state dict at '{name}'")
                items.append([k, walk(v, f"{name}.{k}" if name else str(k), obj, k)])
            return {"d": items}
        if isinstance(obj, (list, tuple)):
            children = [walk(v, f"{name}.{i}" if name else str(i), obj, i) for i, v in enumerate(obj)]
            return {"tuple" if isinstance(obj, tuple) else "l": children}
        if isinstance(obj, _SCALARS):
            if not name:
                raise TypeError("the state dict must be a dict")
            add(values, Leaf(name, obj, container, key))
            return {"v": obj}
        raise TypeError(f"state dict entry '{name}' is a {type(obj).__module__}.{type(obj).__qualname__}: "
                        "expected a torch tensor, a numpy array, a dict, a list, or None/bool/int/float/str")

    if not isinstance(state, dict):
        raise TypeError(f"the state dict must be a dict, not {type(state).__qualname__}")
    skeleton = walk(state, "", None, None)
    return tensors, values, skeleton


def skeleton_values(skeleton: Any, out: Dict[str, Any] | None = None, name: str = "") -> Dict[str, Any]:
    """The plain values of a skeleton, by flat name."""
    out = {} if out is None else out
    if "v" in skeleton:
        out[name] = skeleton["v"]
    elif "d" in skeleton:
        for k, child in skeleton["d"]:
            skeleton_values(child, out, f"{name}.{k}" if name else str(k))
    else:
        for i, child in enumerate(skeleton.get("l", skeleton.get("tuple", []))):
            skeleton_values(child, out, f"{name}.{i}" if name else str(i))
    return out


def build(skeleton: Any, tensors: Dict[str, Any]) -> Any:
    """The structure a skeleton describes, with each tensor name replaced from `tensors`."""
    if "t" in skeleton:
        return tensors[skeleton["t"]]
    if "v" in skeleton:
        return skeleton["v"]
    if "d" in skeleton:
        return {k: build(child, tensors) for k, child in skeleton["d"]}
    if "tuple" in skeleton:
        return tuple(build(child, tensors) for child in skeleton["tuple"])
    return [build(child, tensors) for child in skeleton["l"]]


def tensor_names(skeleton: Any, out: List[str] | None = None) -> List[str]:
    """Names of the tensors a skeleton holds, in walk order."""
    out = [] if out is None else out
    if "t" in skeleton:
        out.append(skeleton["t"])
    elif "d" in skeleton:
        for _, child in skeleton["d"]:
            tensor_names(child, out)
    else:
        for child in skeleton.get("l", skeleton.get("tuple", [])):
            tensor_names(child, out)
    return out
