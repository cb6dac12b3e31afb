"""Mock of the external customer service that the Camel Tuning Lab's routes call."""
__version__ = "0.1.0"
