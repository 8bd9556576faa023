"""The kopf operator: handlers, CRD models, status. The only package importing kopf/kubernetes."""
