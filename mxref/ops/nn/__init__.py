"""Neural-network operators (FullyConnected, Convolution, Pooling, BatchNorm, RNN, ...), one file each."""
