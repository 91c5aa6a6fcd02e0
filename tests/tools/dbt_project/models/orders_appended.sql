{{ config(materialized='incremental') }}
select order_id, amount
from {{ ref('stg_orders') }}
{% if is_incremental() %}
where order_id > (select coalesce(max(order_id), 0) from {{ this }})
{% endif %}
