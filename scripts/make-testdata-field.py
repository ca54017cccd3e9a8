#!/usr/bin/env python3
"""Write testdata/field.h5, a small HDF5 "simulation field" as an HPC code would write it
with h5py: a 32x32x16 float32 temperature field, a gzip-compressed pressure field, the
grid coordinates, a boolean mask, a string dataset (not a tensor: readers skip it) and
attributes on the root group and the datasets.

temperature[i, j, k] = sin(0.2 i) cos(0.2 j) + k / 16, computed in float64 and rounded
to float32 (the unit tests spot-check it).
"""
import os

import h5py
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "field.h5")


def main():
    i, j, k = np.meshgrid(np.arange(32), np.arange(32), np.arange(16), indexing="ij")
    temperature = (np.sin(0.2 * i) * np.cos(0.2 * j) + k / 16.0).astype(np.float32)
    pressure = (101.325 + 0.5 * np.cos(0.1 * (i + j)) * np.exp(-k / 8.0)).astype(np.float32)
    with h5py.File(OUT, "w", libver="earliest", track_order=False) as f:
        f.attrs["title"] = "demo simulation field"
        f.attrs["code"] = "heat3d"
        f.attrs["step"] = np.int64(1200)
        f.attrs["time"] = np.float64(0.75)
        fields = f.create_group("fields")
        t = fields.create_dataset("temperature", data=temperature, track_times=False)
        t.attrs["units"] = "K"
        p = fields.create_dataset("pressure", data=pressure, chunks=(8, 32, 16), compression="gzip",
                                  compression_opts=6, shuffle=True, track_times=False)
        p.attrs["units"] = "kPa"
        grid = f.create_group("grid")
        grid.create_dataset("x", data=np.linspace(0.0, 1.0, 32), track_times=False)
        grid.create_dataset("y", data=np.linspace(0.0, 1.0, 32), track_times=False)
        grid.create_dataset("z", data=np.linspace(0.0, 0.5, 16), track_times=False)
        f.create_dataset("mask", data=(i[:, :, 0] + j[:, :, 0]) % 7 != 0, track_times=False)
        f.create_dataset("notes", data="initial condition: separable sine field", track_times=False)
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
