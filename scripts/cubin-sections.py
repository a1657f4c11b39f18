#!/usr/bin/env python3
"""Machine code of JIT-cached kernels compared without cuobjdump/nvdisasm (not in this toolkit
install): one line per kernel section of each cubin (.text.<kernel>: the SASS bytes, .nv.info.<kernel>:
registers, parameters, exit offsets), with its size and a sha256 prefix. The cubins carry -lineinfo,
so whole files differ whenever source lines move; these sections do not.

  jitllm kernels --compile --target sm_90 --kernel-cache /tmp/a -m M FLAGS   # before a change
  jitllm kernels --compile --target sm_90 --kernel-cache /tmp/b -m M FLAGS   # after it
  diff <(scripts/cubin-sections.py /tmp/a) <(scripts/cubin-sections.py /tmp/b)

Arguments: cubin files or kernel-cache folders (every kernel.cubin below them, by variant name)."""
import hashlib
import os
import struct
import sys


def sections(path):
    d = open(path, 'rb').read()
    if d[:4] != b'\x7fELF' or d[4] != 2:
        sys.exit(f'{path}: expected a 64-bit ELF cubin, found something else')
    shoff, = struct.unpack_from('<Q', d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3A)
    hdrs = [struct.unpack_from('<IIQQQQ', d, shoff + i * shentsize) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    for name, typ, _flags, _addr, off, size in hdrs:
        n = d[stroff + name:d.index(b'\0', stroff + name)].decode()
        if n.startswith(('.text.', '.nv.info.')):
            digest = 'nobits' if typ == 8 else hashlib.sha256(d[off:off + size]).hexdigest()[:16]
            yield n, size, digest


def cubins(arg):
    if os.path.isfile(arg):
        yield os.path.basename(arg), arg
        return
    for root, _dirs, files in sorted(os.walk(arg)):
        if 'kernel.cubin' in files:
            yield entry_label(root), os.path.join(root, 'kernel.cubin')


def entry_label(root):
    """The entry's variant (symbol<defines>) and arch from its options.txt: the folder name
    (<symbol>.<defines>.<key>, the key hashing the source) is cut short for long define lists, so two
    variants can share it."""
    arch = os.path.basename(os.path.dirname(root))
    try:
        with open(os.path.join(root, 'options.txt')) as f:
            for line in f:
                if line.startswith('# variant:'):
                    return line.split(':', 1)[1].strip().replace(' ', '') + '@' + arch
    except OSError:
        pass
    return os.path.basename(root).rsplit('.', 1)[0] + '@' + arch


if len(sys.argv) < 2:
    sys.exit(__doc__)
for arg in sys.argv[1:]:
    for label, path in sorted(cubins(arg)):
        for n, size, digest in sections(path):
            print(label, n, size, digest)
