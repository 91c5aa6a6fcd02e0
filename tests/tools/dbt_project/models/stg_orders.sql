{{ config(materialized='view') }}
select order_id, lower(customer) as customer, amount, status, updated_at
from {{ ref('raw_orders') }}
