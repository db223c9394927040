# SPDX-License-Identifier: Apache-2.0
"""gradsum's safetensors files seen from Python, with numpy alone (the
format's few lines: a little-endian u64, a JSON header, numpy.frombuffer)
and, where it is installed, PyTorch.

  read FILE PARAMS      FILE's tensors, put back into gradsum's flat order
                        as the user guide documents it, must equal the
                        parameters gradsum printed (PARAMS, one per line)
  write numpy|torch DIR writes DIR/model.safetensors (an MLP 4-8(tanh)-1 in
                        PyTorch's layout, with gradsum's metadata), the
                        same tensors without metadata in DIR/bare.safetensors,
                        rows in DIR/rows.csv and Python's predictions for
                        them in DIR/expected.txt; torch: exit 77 without it
  torchload FILE CSV OUT  loads FILE, a file gradsum wrote for that MLP, into
                        the nn.Module with load_state_dict(strict=True) and
                        writes its predictions for the rows of CSV to OUT
  compare A B           the numbers of files A and B agree to 1e-12
  gpt TEXT DIR SHAPE    (torch; exit 77 without it) the reference GPT of
                        benchmarks/peers/gpt_torch.py for SHAPE
                        (V,T,L,H,C): its initial tensors in
                        DIR/init.safetensors (PyTorch's names, F32, no
                        metadata), and in DIR/torch_gradient.txt the mean
                        loss over every training window of TEXT (the last
                        tenth held out) at stride T and its gradient, in
                        double, one value per line in state_dict order
  gptload FILE TEXT OUT SHAPE  loads FILE, a GPT gradsum saved, into that
                        module (load_state_dict(strict=True)) and writes
                        the same loss and gradient to OUT
  gptcompare A B        the loss and gradient of A and B agree to 1e-10
                        relative to the gradient's norm
"""
import json
import struct
import sys

import numpy as np

DTYPES = {'F32': '<f4', 'F64': '<f8'}


def read_safetensors(path):
    """The metadata and the tensors (name: numpy array) of a file."""
    data = open(path, 'rb').read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        begin, end = entry['data_offsets']
        tensors[name] = np.frombuffer(body[begin:end], dtype=DTYPES[entry['dtype']]).reshape(
            entry['shape'])
    return header.get('__metadata__', {}), tensors


def write_safetensors(path, tensors, metadata=None):
    """`tensors` (name, array) as F32, in order, as the format lays them out."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header['__metadata__'] = metadata
    for name, array in tensors:
        blob = np.ascontiguousarray(array, dtype='<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(np.shape(array)),
                        'data_offsets': [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(',', ':')).encode()
    text += b' ' * (-len(text) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(text)) + text + b''.join(blobs))


def flat_parameters(metadata, tensors):
    """gradsum's parameter vector from the tensors (docs/user-guide.md):
    linear [w, b]; softmax [w_0, b_0, w_1, b_1, ...]; an MLP layer by layer,
    W_l (inputs x outputs, row-major: the weight transposed) then b_l."""
    model = metadata['gradsum.model']
    if model == 'linear':
        return np.concatenate([tensors['weight'][0], tensors['bias']])
    if model == 'softmax':
        w, b = tensors['weight'], tensors['bias']
        return np.concatenate([np.append(w[c], b[c]) for c in range(len(b))])
    layers = model.count('-')
    parts = []
    for l in range(layers):
        parts += [tensors['layers.%d.weight' % l].T.ravel(), tensors['layers.%d.bias' % l]]
    return np.concatenate(parts)


def check_read(path, params):
    metadata, tensors = read_safetensors(path)
    flat = flat_parameters(metadata, tensors).astype(np.float64)
    printed = np.array([float(line) for line in open(params)])
    if flat.shape != printed.shape or not np.array_equal(flat, printed):
        sys.exit('FAILED: %s holds %s, gradsum printed %s' % (path, flat[:6], printed[:6]))
    print('%s: %d parameters of %s equal those gradsum printed' %
          (path, flat.size, metadata['gradsum.model']))


def numpy_model(rng):
    w0 = (rng.standard_normal((8, 4)) * 0.5).astype(np.float32)
    b0 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w1 = (rng.standard_normal((1, 8)) * 0.5).astype(np.float32)
    b1 = (rng.standard_normal(1) * 0.1).astype(np.float32)
    tensors = [('layers.0.weight', w0), ('layers.0.bias', b0),
               ('layers.1.weight', w1), ('layers.1.bias', b1)]

    def predict(x):
        a = np.tanh(x @ w0.astype(np.float64).T + b0)
        return (a @ w1.astype(np.float64).T + b1)[:, 0]
    return tensors, predict


def torch_net():
    """PyTorch's module for mlp:4-8(tanh)-1, its seed set; exit 77 without torch."""
    try:
        import torch
    except ImportError:
        print('torch is not installed: skipped')
        sys.exit(77)
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)])

        def forward(self, x):
            return self.layers[1](torch.tanh(self.layers[0](x)))
    return torch, Net


def torch_model():
    torch, Net = torch_net()
    net = Net()
    tensors = [(name, t.detach().numpy()) for name, t in net.state_dict().items()]
    wide = Net().double()
    wide.load_state_dict({name: t.double() for name, t in net.state_dict().items()})

    def predict(x):
        with torch.no_grad():
            return wide(torch.from_numpy(x)).numpy()[:, 0]
    return tensors, predict


def write(kind, folder):
    rng = np.random.default_rng(7)
    tensors, predict = numpy_model(rng) if kind == 'numpy' else torch_model()
    metadata = {'gradsum.model': 'mlp:4-8(tanh)-1', 'gradsum.features': '4',
                'gradsum.outputs': '1', 'gradsum.loss': 'squared_error'}
    write_safetensors(folder + '/model.safetensors', tensors, metadata)
    write_safetensors(folder + '/bare.safetensors', tensors)
    x = rng.standard_normal((25, 4))
    with open(folder + '/rows.csv', 'w') as out:
        for row in x:
            out.write(','.join('%.17g' % v for v in row) + ',0\n')
    with open(folder + '/expected.txt', 'w') as out:
        for v in predict(x):
            out.write('%.17g\n' % v)


def torch_load(path, rows, out):
    torch, Net = torch_net()
    _, tensors = read_safetensors(path)
    net = Net().double()
    net.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in tensors.items()},
                        strict=True)
    x = np.loadtxt(rows, delimiter=',', ndmin=2)[:, :4]
    with torch.no_grad():
        np.savetxt(out, net(torch.from_numpy(x)).numpy()[:, 0], fmt='%.17g')


def torch_gpt(shape):
    """The reference GPT module (benchmarks/peers/gpt_torch.py) of
    shape V,T,L,H,C in double; exit 77 without torch."""
    try:
        import torch
    except ImportError:
        print('torch is not installed: skipped')
        sys.exit(77)
    import importlib.util
    import os
    peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'benchmarks',
                        'peers', 'gpt_torch.py')
    spec = importlib.util.spec_from_file_location('gpt_torch', peer)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(3)
    vocabulary, context, layers, heads, width = (int(v) for v in shape.split(','))
    return torch, module.GPT(vocabulary, context, layers, heads, width)


def gpt_gradient(torch, net, text, context, out):
    """Mean loss over every training window at stride `context` and its
    gradient, in double, written one value per line."""
    data = open(text, 'rb').read()
    chars = sorted(set(data))
    index = {c: i for i, c in enumerate(chars)}
    train = torch.tensor([index[c] for c in data[:len(data) - int(len(data) * 0.1)]])
    n = (len(train) - 1) // context
    windows = torch.stack([train[k * context:(k + 1) * context + 1] for k in range(n)])
    net = net.double()
    net.zero_grad()
    logits = net(windows[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, len(chars)),
                                             windows[:, 1:].reshape(-1))
    loss.backward()
    values = [loss.item()] + [v for p in net.parameters() for v in p.grad.reshape(-1).tolist()]
    np.savetxt(out, np.array(values), fmt='%.17g')


def gpt_write(text, folder, shape):
    torch, net = torch_gpt(shape)
    write_safetensors(folder + '/init.safetensors',
                      [(name, t.detach().numpy()) for name, t in net.state_dict().items()])
    # The gradient at the weights as written (F32), which gradsum reads.
    net.load_state_dict({name: t.float() for name, t in net.state_dict().items()})
    gpt_gradient(torch, net, text, int(shape.split(',')[1]), folder + '/torch_gradient.txt')


def gpt_load(path, text, out, shape):
    torch, net = torch_gpt(shape)
    _, tensors = read_safetensors(path)
    net = net.double()
    net.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in tensors.items()},
                        strict=True)
    gpt_gradient(torch, net, text, int(shape.split(',')[1]), out)


def gpt_compare(a, b):
    x = np.loadtxt(a, ndmin=1)
    y = np.loadtxt(b, ndmin=1)
    if x.shape != y.shape:
        sys.exit('FAILED: %s holds %d values, %s %d' % (a, x.size, b, y.size))
    loss = abs(x[0] - y[0]) / abs(y[0])
    gradient = np.linalg.norm(x[1:] - y[1:]) / np.linalg.norm(y[1:])
    if not (loss <= 1e-12 and gradient <= 1e-10):
        sys.exit('FAILED: %s and %s: loss %.17g against %.17g, gradient relative difference '
                 '%.3g' % (a, b, x[0], y[0], gradient))
    print('the loss (%.10g) and the %d partials agree with PyTorch\'s: relative differences '
          '%.2g and %.2g' % (y[0], y.size - 1, loss, gradient))


def compare(a, b):
    x = np.loadtxt(a, ndmin=1)
    y = np.loadtxt(b, ndmin=1)
    if x.shape != y.shape or not np.allclose(x, y, rtol=1e-12, atol=1e-13):
        sys.exit('FAILED: %s and %s differ: %s against %s' % (a, b, x[:4], y[:4]))
    print('%d predictions agree with Python\'s' % x.size)


if __name__ == '__main__':
    command = sys.argv[1]
    if command == 'read':
        check_read(sys.argv[2], sys.argv[3])
    elif command == 'write':
        write(sys.argv[2], sys.argv[3])
    elif command == 'torchload':
        torch_load(sys.argv[2], sys.argv[3], sys.argv[4])
    elif command == 'gpt':
        gpt_write(sys.argv[2], sys.argv[3], sys.argv[4])
    elif command == 'gptload':
        gpt_load(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif command == 'gptcompare':
        gpt_compare(sys.argv[2], sys.argv[3])
    else:
        compare(sys.argv[2], sys.argv[3])
