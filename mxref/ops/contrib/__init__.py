"""Contrib operators (``_contrib_*``, reached as ``mx.nd.contrib.*``): detection boxes, SSD's MultiBox ops."""
