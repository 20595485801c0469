#!/usr/bin/python3
"""numpy reads what tensorlib writes: runs test_io with a scratch directory (it saves
all.npz, all.safetensors, scalar.npy and known.npy there), then loads them with numpy, and
the safetensors file with a reader written here from the format's description.

    io_numpy.py PATH/TO/test_io FIXTURE_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = {'U8': '<u1', 'U32': '<u4', 'I16': '<i2', 'I32': '<i4', 'I64': '<i8', 'F16': '<f2',
          'F32': '<f4', 'F64': '<f8', 'BF16': '<u2'}


def read_safetensors(path):
    raw = open(path, 'rb').read()
    (n,) = struct.unpack('<Q', raw[:8])
    assert (8 + n) % 8 == 0, 'data not aligned to 8 bytes'
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    out = {}
    for name, e in header.items():
        begin, end = e['data_offsets']
        out[name] = (e['dtype'], np.frombuffer(data[begin:end], DTYPES[e['dtype']])
                     .reshape(e['shape']))
    return out


def main():
    exe, fixtures = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([exe, fixtures, tmp], capture_output=True, text=True, timeout=120)
        print(run.stdout, end='')
        if run.returncode:
            sys.exit('test_io failed')
        known = np.load(os.path.join(tmp, 'known.npy'))
        assert known.dtype == np.float32 and known.tolist() == [[0, 3], [1, 4], [2, 5]], known
        scalar = np.load(os.path.join(tmp, 'scalar.npy'))
        assert scalar.shape == () and scalar == 2.5, scalar
        npz = np.load(os.path.join(tmp, 'all.npz'))
        st = read_safetensors(os.path.join(tmp, 'all.safetensors'))
        assert sorted(npz.files) == ['t0', 't1', 't2', 't3', 't4', 't5', 't7', 't8'], npz.files
        for name in npz.files:
            a = npz[name]
            dtype, b = st[name]
            assert a.shape == (5, 2, 3) and b.shape == (5, 2, 3), (name, a.shape, b.shape)
            assert a.dtype == np.dtype(DTYPES[dtype]) and np.array_equal(a, b), name
        # bf16 (t6) is only in safetensors: its bits are the top half of the f32 values
        dtype, bf = st['t6']
        assert dtype == 'BF16' and bf.shape == (5, 2, 3)
        as_f32 = (bf.astype('<u4') << 16).view('<f4')
        assert np.all(np.abs(as_f32) <= 100), as_f32
    print('numpy read every file tensorlib wrote')


if __name__ == '__main__':
    main()
