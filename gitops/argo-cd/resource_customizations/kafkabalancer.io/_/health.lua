-- Health of kafka-balancer's BalancePolicy and ResourceGroup (kafkabalancer.io), read from their
-- metav1.Condition conditions as kstatus reads them: Stalled is Degraded, Reconciling is Progressing,
-- Ready is Healthy, also while samples are collected and during a long execution (the message says
-- which). A policy with spec.paused is Suspended. Uses Lua's base library only.
local hs = {}
local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.conditions == nil or status.observedGeneration ~= generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the kafka-balancer operator to reconcile generation " .. tostring(generation)
  return hs
end
local conditions = {}
for _, condition in ipairs(status.conditions) do
  conditions[condition.type] = condition
end
local function holds(type)
  return conditions[type] ~= nil and conditions[type].status == "True"
end
local function says(condition)
  if condition.message == nil or condition.message == "" then
    return condition.reason
  end
  return condition.reason .. ": " .. condition.message
end
if holds("Stalled") then
  hs.status = "Degraded"
  hs.message = says(conditions["Stalled"])
  return hs
end
if holds("Reconciling") then
  hs.status = "Progressing"
  hs.message = says(conditions["Reconciling"])
  return hs
end
if obj.spec ~= nil and obj.spec.paused == true then
  hs.status = "Suspended"
  hs.message = "spec.paused is true: no proposal is executed"
  return hs
end
if not holds("Ready") then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end
hs.status = "Healthy"
if holds("Executing") then
  local progress = status.progress or {}
  hs.message = says(conditions["Executing"]) .. ", " .. tostring(progress.percent or 0) .. "% done"
  if progress.stuckMoves ~= nil and progress.stuckMoves > 0 then
    hs.message = hs.message .. ", " .. tostring(progress.stuckMoves) .. " move(s) stuck"
  end
elseif conditions["ProposalReady"] ~= nil then
  hs.message = says(conditions["ProposalReady"])
else
  hs.message = says(conditions["Ready"])
end
return hs
