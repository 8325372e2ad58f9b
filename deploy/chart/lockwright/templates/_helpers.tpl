{{/*
Labels of a component's objects: app.kubernetes.io/name, the component (if any) and the
user's extra labels. Call with (dict "root" $ "component" "worker").
*/}}
{{- define "lockwright.labels" -}}
app.kubernetes.io/name: lockwright
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- with .root.Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The labels a Deployment selects its Pods by (as deploy/ has them). */}}
{{- define "lockwright.selector" -}}
app.kubernetes.io/name: lockwright
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "lockwright.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Where the Temporal Secrets are mounted in the containers. */}}
{{- define "lockwright.secretsDir" -}}/etc/lockwright/temporal{{- end }}

{{/*
Variables the chart sets from its own values: a settings map naming one of them is refused,
so no variable is given twice.
*/}}
{{- define "lockwright.ownedEnv" -}}
LOCKWRIGHT_TEMPORAL_ADDRESS LOCKWRIGHT_TEMPORAL_NAMESPACE LOCKWRIGHT_TASK_QUEUE
LOCKWRIGHT_TEMPORAL_TLS LOCKWRIGHT_TEMPORAL_TLS_CERT LOCKWRIGHT_TEMPORAL_TLS_KEY
LOCKWRIGHT_TEMPORAL_TLS_CA LOCKWRIGHT_TEMPORAL_TLS_SERVER_NAME
LOCKWRIGHT_TEMPORAL_API_KEY_FILE LOCKWRIGHT_SYSTEM_NAMESPACE LOCKWRIGHT_CACHE_DIR
LOCKWRIGHT_METRICS_ADDRESS
{{- end }}

{{/*
The Temporal connection and the system namespace, as both processes read them (docs/operations.md,
"Settings" and "Temporal Cloud").
*/}}
{{- define "lockwright.connectionEnv" -}}
{{- $t := .Values.temporal -}}
{{- $dir := include "lockwright.secretsDir" . -}}
- name: LOCKWRIGHT_TEMPORAL_ADDRESS
  value: {{ required "temporal.address: give the Temporal frontend as HOST:PORT" $t.address | quote }}
- name: LOCKWRIGHT_TEMPORAL_NAMESPACE
  value: {{ required "temporal.namespace: give the Temporal namespace, e.g. default" $t.namespace | quote }}
{{- with $t.taskQueue }}
- name: LOCKWRIGHT_TASK_QUEUE
  value: {{ . | quote }}
{{- end }}
{{- if $t.tls.enabled }}
- name: LOCKWRIGHT_TEMPORAL_TLS
  value: "true"
{{- end }}
{{- with $t.tls.serverName }}
- name: LOCKWRIGHT_TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $t.tls.clientCertSecret }}
- name: LOCKWRIGHT_TEMPORAL_TLS_CERT
  value: {{ $dir }}/client/tls.crt
- name: LOCKWRIGHT_TEMPORAL_TLS_KEY
  value: {{ $dir }}/client/tls.key
{{- end }}
{{- if $t.tls.caSecret }}
- name: LOCKWRIGHT_TEMPORAL_TLS_CA
  value: {{ $dir }}/ca/ca.crt
{{- end }}
{{- if $t.apiKey.secret }}
- name: LOCKWRIGHT_TEMPORAL_API_KEY_FILE
  value: {{ $dir }}/api-key/api-key
{{- end }}
- name: LOCKWRIGHT_SYSTEM_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{/*
The user's settings for one component: the shared map, then the component's own (which
wins). Call with (dict "root" $ "own" .Values.worker.settings "field" "worker.settings").
*/}}
{{- define "lockwright.settingsEnv" -}}
{{- $owned := splitList " " (include "lockwright.ownedEnv" .root | replace "\n" " ") -}}
{{- range $field, $map := dict "settings" .root.Values.settings .field .own }}
{{- range $name, $_ := $map }}
{{- if has $name $owned }}
{{- fail (printf "%s.%s: the chart sets this variable from its own values; use temporal.*, namespace.name or metrics.* (see values.yaml)" $field $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $value := merge (dict) .own .root.Values.settings }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* The Secrets the Temporal connection needs, mounted read-only. */}}
{{- define "lockwright.connectionMounts" -}}
{{- $t := .Values.temporal -}}
{{- $dir := include "lockwright.secretsDir" . -}}
{{- if $t.tls.clientCertSecret }}
- name: temporal-client-cert
  mountPath: {{ $dir }}/client
  readOnly: true
{{- end }}
{{- if $t.tls.caSecret }}
- name: temporal-ca
  mountPath: {{ $dir }}/ca
  readOnly: true
{{- end }}
{{- if $t.apiKey.secret }}
- name: temporal-api-key
  mountPath: {{ $dir }}/api-key
  readOnly: true
{{- end }}
{{- end }}

{{- define "lockwright.connectionVolumes" -}}
{{- $t := .Values.temporal -}}
{{- with $t.tls.clientCertSecret }}
- name: temporal-client-cert
  secret:
    secretName: {{ . }}
    items:
      - {key: {{ $t.tls.certKey | quote }}, path: tls.crt}
      - {key: {{ $t.tls.keyKey | quote }}, path: tls.key}
{{- end }}
{{- with $t.tls.caSecret }}
- name: temporal-ca
  secret:
    secretName: {{ . }}
    items:
      - {key: {{ $t.tls.caKey | quote }}, path: ca.crt}
{{- end }}
{{- with $t.apiKey.secret }}
- name: temporal-api-key
  secret:
    secretName: {{ . }}
    items:
      - {key: {{ $t.apiKey.key | quote }}, path: api-key}
{{- end }}
{{- end }}

{{/* Where a Pod runs: node selector, tolerations, affinity, of worker or watcher. */}}
{{- define "lockwright.placement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
