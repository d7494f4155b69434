"""Image operators (``mx.nd.image.*`` / ``mx.sym.image.*``): tensor conversion, geometry, colour."""
