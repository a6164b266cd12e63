"""Site and patient signal in image features: ``pathbind embed`` and ``pathbind audit-features``."""
