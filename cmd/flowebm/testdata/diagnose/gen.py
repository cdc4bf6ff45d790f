# Regenerates the chain files of this folder:
#   cd cmd/flowebm/testdata/diagnose && /usr/bin/python3 gen.py
import numpy as np

rng = np.random.default_rng(20230601)
np.save('iid_4x500_f4.npy', rng.standard_normal((4, 500)).astype(np.float32))

x = np.empty((4, 500, 4))
x[:, :, 0] = rng.standard_normal((4, 500))          # iid: R-hat ≈ 1, ESS ≈ 2000
v = rng.standard_normal(4)
for n in range(500):                                # AR(1), rho = 0.95
    x[:, n, 1] = v
    v = 0.95 * v + np.sqrt(1 - 0.95**2) * rng.standard_normal(4)
x[:, :, 2] = rng.standard_normal((4, 500)) + 6 * (np.arange(4) % 2)[:, None]  # stuck in two modes
x[:, :, 3] = 1.5                                    # constant: diagnostics undefined
np.save('mixed_4x500x4_f8.npy', x)

np.save('bad_rank1.npy', np.zeros(10))
np.save('bad_rank4.npy', np.zeros((2, 4, 1, 1)))
np.save('one_chain.npy', rng.standard_normal((1, 100)))
np.save('bad_three_draws.npy', rng.standard_normal((4, 3)))
nan = rng.standard_normal((3, 10, 2))
nan[2, 7, 1] = np.nan
np.save('bad_nan.npy', nan)
np.save('bad_bool.npy', np.zeros((4, 10), dtype=bool))  # integers are read (round 98 A4), bools are not
np.save('bad_f16.npy', np.zeros((4, 10), dtype=np.float16))
with open('bad_not_npy.npy', 'w') as f:
    f.write('chain,draw,x\n0,0,1.0\n')
