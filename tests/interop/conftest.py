"""Name the reference packages behind every interop failure.

The interop tests compare tensorkit with the Python reference packages at the versions
scripts/requirements-test.txt pins (or the newest ones, under `make test-latest-refs`).
A failing test's report gets a section that lists the versions it ran against, so a
mismatch says which reference produced the expected value.
"""
import importlib.metadata

import pytest

REFERENCES = ("numpy", "safetensors", "h5py", "hdf5plugin", "ml_dtypes", "tensorly", "torch", "gguf",
              "compressed-tensors", "transformers")


def reference_versions():
    found = []
    for name in REFERENCES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def pytest_report_header(config):
    return f"reference packages: {reference_versions()}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("reference packages", reference_versions()))
