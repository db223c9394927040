# SPDX-License-Identifier: Apache-2.0
"""A gradsum checkpoint's bytes, for the hostile-input tests that forge one:
read without its CRC-32, edit, write back with the CRC made right again.

As a program: checkpoint_bytes.py IN OUT RECORD INDEX VALUE writes IN with
value INDEX of RECORD (host: the optimizer's host values, mean, scale,
loop) set to VALUE."""
import struct
import sys
import zlib


def read(path):
    """The checkpoint's bytes before its checksum."""
    return bytearray(open(path, 'rb').read())[:-4]


def write(path, data):
    """`data` followed by its CRC-32, as a checkpoint ends."""
    open(path, 'wb').write(bytes(data) + struct.pack('<I', zlib.crc32(data) & 0xffffffff))


def after_names(data):
    """The offset after the scalar type's name and size and the six policy
    names (where the parameter count starts), and the scalar's size."""
    at = 24
    at += 4 + struct.unpack_from('<I', data, at)[0]
    size = struct.unpack_from('<I', data, at)[0]
    at += 4
    for _ in range(6):
        at += 4 + struct.unpack_from('<I', data, at)[0]
    return at, size


def set_value(data, record, index, value):
    """Sets value `index` of a record of doubles after the state rows."""
    at, size = after_names(data)
    parameters = struct.unpack_from('<q', data, at)[0]
    rows = struct.unpack_from('<q', data, at + 64)[0]
    at += 72 + (1 + rows) * parameters * size
    for name in ['host', 'mean', 'scale', 'loop']:
        count = struct.unpack_from('<Q', data, at)[0]
        if name == record:
            struct.pack_into('<d', data, at + 8 + 8 * index, value)
        at += 8 + 8 * count


if __name__ == '__main__':
    source, target, record, index, value = sys.argv[1:6]
    data = read(source)
    set_value(data, record, int(index), float(value))
    write(target, data)
