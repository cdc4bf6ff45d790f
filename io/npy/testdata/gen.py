# Regenerates the NumPy-written golden files of this folder:
#   cd io/npy/testdata && /usr/bin/python3 gen.py
import struct

import numpy as np

a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 8.0 - 1.0
np.save('c_f8_2x3x4.npy', a)
np.save('c_f4_2x3x4.npy', a.astype(np.float32))
np.save('fortran_f8_2x3x4.npy', np.asfortranarray(a))
np.save('fortran_f4_2x3x4.npy', np.asfortranarray(a.astype(np.float32)))
np.save('big_f8_2x3x4.npy', a.astype('>f8'))
np.save('i8_2x3x4.npy', (a * 8).astype(np.int64))
np.save('u1_2x3x4.npy', (a * 8 + 8).astype(np.uint8))
np.save('bool_2x3x4.npy', a > 0)
np.save('scalar_f8.npy', np.float64(2.5))
np.save('empty_f8_0x3.npy', np.zeros((0, 3)))
np.save('f2_3.npy', np.ones(3, dtype=np.float16))
np.save('structured.npy', np.zeros(3, dtype=[('x', '<f8'), ('y', '<i4')]))
np.save('complex_3.npy', np.ones(3, dtype=np.complex128))
with open('v2_f8_2x3x4.npy', 'wb') as f:
    np.lib.format.write_array(f, a, version=(2, 0))
# A valid header whose keys are not in NumPy's usual order.
hdr = "{'shape': (2, 3, 4), 'fortran_order': False, 'descr': '<f8'}"
hdr += ' ' * ((64 - (10 + len(hdr) + 1) % 64) % 64) + '\n'
with open('keyorder_f8_2x3x4.npy', 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode() + a.tobytes())
with open('c_f8_2x3x4.npy', 'rb') as f:
    b = f.read()
with open('truncated.npy', 'wb') as f:
    f.write(b[:-5])
