use opkit::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewUser {
    name: String,
}

#[operation(namespace = "users", mutation)]
async fn create(Input(user): Input<NewUser>, admin: bool) -> String {
    format!("{} {admin}", user.name)
}

fn main() {}
