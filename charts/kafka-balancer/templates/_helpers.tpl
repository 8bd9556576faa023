{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "kafka-balancer.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Resource name prefix: the release name alone when it already contains the chart name. */}}
{{- define "kafka-balancer.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Recommended labels (app.kubernetes.io/*) on every object. */}}
{{- define "kafka-balancer.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kafka-balancer.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: kafka-balancer
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The subset of labels that never changes across upgrades (Deployment selectors are immutable). */}}
{{- define "kafka-balancer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kafka-balancer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kafka-balancer.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kafka-balancer.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "kafka-balancer.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Namespaces whose BalancePolicies the operator serves when it does not watch them all. */}}
{{- define "kafka-balancer.watchedNamespaces" -}}
{{- if .Values.watch.namespaces }}
{{- join "," .Values.watch.namespaces }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/* Namespace of SparkApplication objects. */}}
{{- define "kafka-balancer.sparkNamespace" -}}
{{- default .Release.Namespace .Values.spark.sparkApplication.namespace }}
{{- end }}

{{/* Name of the sample-store PVC the operator mounts, or "" without persistence. */}}
{{- define "kafka-balancer.sampleClaim" -}}
{{- if .Values.sampleStore.persistence.enabled }}
{{- default (printf "%s-samples" (include "kafka-balancer.fullname" .)) .Values.sampleStore.persistence.existingClaim }}
{{- end }}
{{- end }}

{{/*
  The claim SparkApplication pods mount to read the samples and write the snapshot. A PVC is
  namespaced: the chart's own claim serves only Spark pods in the release namespace, and only if it is
  ReadWriteMany (the operator pod has it mounted at the same time). Otherwise name a claim in the Spark
  namespace that holds the same store.
*/}}
{{- define "kafka-balancer.sparkVolumeClaim" -}}
{{- $app := .Values.spark.sparkApplication }}
{{- if $app.volumeClaim }}
{{- $app.volumeClaim }}
{{- else if ne (include "kafka-balancer.sparkNamespace" .) .Release.Namespace }}
{{- fail (printf "spark.sparkApplication.volumeClaim: required when spark.sparkApplication.namespace (%s) is not the release namespace (%s): a PersistentVolumeClaim there that holds the same sample store" $app.namespace .Release.Namespace) }}
{{- else if not .Values.sampleStore.persistence.enabled }}
{{- fail "sampleStore.persistence.enabled: must be true when spark.engine is sparkApplication (the Spark pods read the samples from that claim), or set spark.sparkApplication.volumeClaim" }}
{{- else if and (not .Values.sampleStore.persistence.existingClaim) (not (has "ReadWriteMany" .Values.sampleStore.persistence.accessModes)) }}
{{- fail (printf "sampleStore.persistence.accessModes: must include ReadWriteMany when spark.engine is sparkApplication (the operator and the Spark pods mount the claim at once), got %v" .Values.sampleStore.persistence.accessModes) }}
{{- else }}
{{- include "kafka-balancer.sampleClaim" . }}
{{- end }}
{{- end }}

{{/*
  Secrets the operator may read, as "namespace/name" lines: exactly rbac.secrets. A policy's
  spec.cluster.credentialsSecret is read from the policy's own namespace, so that is where it is granted.
*/}}
{{- define "kafka-balancer.secretRefs" -}}
{{- range .Values.rbac.secrets }}
{{- $ns := .namespace }}
{{- range .names }}
{{ $ns }}/{{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/* The monitoring objects need both the switch and the Prometheus operator's API in the cluster. */}}
{{- define "kafka-balancer.hasMonitoringAPI" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}true{{ end }}
{{- end }}

{{/*
  The rules below are exactly the calls the operator makes (tests/delivery/test_chart_rbac.py compares
  them with the calls in kafka_balancer.controller): kopf lists, watches and patches its own objects
  (its finalizer and progress annotations) and their /status, and posts Events; the controller reads
  ResourceGroups and keeps proposals too large for status in ConfigMaps owned by the policy, whose
  blockOwnerDeletion owner reference needs update on balancepolicies/finalizers.
*/}}
{{- define "kafka-balancer.namespacedRules" -}}
- apiGroups: ["kafkabalancer.io"]
  resources: ["balancepolicies"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["kafkabalancer.io"]
  resources: ["resourcegroups"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["kafkabalancer.io"]
  resources: ["balancepolicies/status", "resourcegroups/status"]
  verbs: ["patch"]
- apiGroups: ["kafkabalancer.io"]
  resources: ["balancepolicies/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "create", "patch"]
{{- end }}
